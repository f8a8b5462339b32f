import CanonicalJSON
import Foundation
import PropertyBased
import PropertyChecks
import Testing

@Suite("RFC 3339 timestamps")
struct TimestampTests {
    @Test(
        "valid date-times parse to the exact microsecond",
        arguments: [
            ("1970-01-01T00:00:00Z", 0),
            ("2026-11-21T05:42:00Z", 1_795_239_720_000_000),
            ("2026-11-21T05:42:00.123456Z", 1_795_239_720_123_456),
            ("2026-11-21T05:42:00.1234569Z", 1_795_239_720_123_456),
            ("2026-11-21T07:42:00+02:00", 1_795_239_720_000_000),
            ("2026-11-21t05:42:00.5z", 1_795_239_720_500_000),
            ("2024-02-29T23:59:59-00:30", 1_709_252_999_000_000),
            ("1969-12-31T23:59:59.999999Z", -1),
        ]
    )
    func parses(text: String, micros: Int64) {
        #expect(RFC3339.parse(text) == Timestamp(microsecondsSince1970: micros))
    }

    @Test(
        "anything else is refused, and U+0000, which PostgreSQL cannot store",
        arguments: [
            "", "2026-11-21", "2026-11-21T05:42:00", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z",
            "2026-11-21T24:00:00Z", "2026-11-21T05:60:00Z", "2026-11-21T05:42:00.Z", "2026-11-21T05:42:00+2:00",
            "2026-11-21T05:42:00Z junk", "tomorrow", "2026-11-21T05:42:00+24:00", "２０２６-11-21T05:42:00Z",
        ]
    )
    func refuses(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    @Test("formatting and parsing round-trip any instant")
    func roundTrip() async {
        await checkProperty(count: 500, input: Gen.int64(in: -2_000_000_000_000_000...8_000_000_000_000_000)) {
            micros in
            let timestamp = Timestamp(microsecondsSince1970: micros)
            #expect(RFC3339.parse(RFC3339.format(timestamp)) == timestamp)
        }
    }

    @Test("formatting agrees with Foundation's ISO 8601 formatter")
    func agreesWithFoundation() {
        let timestamp = Timestamp(microsecondsSince1970: 1_795_239_720_000_000)
        let date = Date(timeIntervalSince1970: 1_795_239_720)
        #expect(RFC3339.format(timestamp) == ISO8601DateFormatter().string(from: date))
    }

    @Test("timestamps are RFC 3339 strings in JSON")
    func codable() throws {
        let timestamp = Timestamp(microsecondsSince1970: 1_795_239_720_250_000)
        let data = try JSONEncoder().encode([timestamp])
        #expect(String(decoding: data, as: UTF8.self) == #"["2026-11-21T05:42:00.250000Z"]"#)
        #expect(try JSONDecoder().decode([Timestamp].self, from: data) == [timestamp])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([Timestamp].self, from: Data(#"["soon"]"#.utf8))
        }
    }
}

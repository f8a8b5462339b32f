import Foundation
import LogArchive
import PropertyBased
import Testing

@Suite("Sealing archived values")
struct SealedArchiveTests {
    static let key = [UInt8](repeating: 7, count: 32)
    static let keyHex = String(repeating: "07", count: 32)

    /// Runs `csv` through a sealer of `data` in pieces of `size` bytes; the archive's records. The
    /// redaction names the reference and the row's `kind`; "public" holds nothing personal.
    static func sealed(_ csv: [UInt8], inPiecesOf size: Int) throws -> [[String?]] {
        var sealer = ArchiveSealer(table: "events", rowKey: "id", column: "data") { value, reference, column in
            value == "public" ? nil : "redacted for \(reference) \(column("kind") ?? "?")"
        }
        var out: [UInt8] = []
        for start in stride(from: 0, to: csv.count, by: size) {
            try csv[start..<min(start + size, csv.count)].withUnsafeBytes { piece in
                try sealer.feed(piece) { out += $0 }
            }
        }
        try sealer.finish()
        return try CSVRecordsTests.read(String(decoding: out, as: UTF8.self), inPiecesOf: 5)
    }

    static func copy(_ rows: [[String?]]) -> [UInt8] {
        var csv: [UInt8] = []
        CSVLine.append(["id", "data", "kind"] + ArchiveSealer.workingColumns, to: &csv)
        for row in rows { CSVLine.append(row, to: &csv) }
        return csv
    }

    @Test("records written as PostgreSQL writes them read back the same, NULL apart from the empty text")
    func linesRoundTrip() async {
        let shapes: [String?] = [nil, "", "a,b", "say \"hi\"", "two\nlines", "\r", "\\.", "é😀", "{\"k\": [1]}"]
        let field = Gen.int(in: 0...shapes.count * 2).map { $0 < shapes.count ? shapes[$0] : "w\($0)" }
        await propertyCheck(count: 300, input: field.array(of: 1...5).array(of: 0...8)) { records in
            var csv: [UInt8] = []
            for record in records { CSVLine.append(record, to: &csv) }
            let read = try CSVRecordsTests.read(String(decoding: csv, as: UTF8.self), inPiecesOf: 3)
            #expect(read == records)
        }
    }

    @Test(
        "each row is redacted and its value sealed under its key for its row alone, in pieces of any size; without a reference it is as it came, without a key or anything personal it seals nothing"
    )
    func sealsRows() async throws {
        let values = Gen.int(in: 0...4).map {
            ["public", "", "{\"name\": \"Ada, \\\"A\\\"\"}", "line\nbreak", "token"][$0]
        }
        let row = zip(values, Gen.int(in: 0...3))
        await propertyCheck(count: 200, input: row.array(of: 1...12), Gen.int(in: 1...40)) { rows, size in
            // Shape 0: no reference; 1: no key; 2 and 3: a key.
            let copied = rows.enumerated().map { index, row -> [String?] in
                let (value, shape) = row
                return [
                    "\(index)", value, "k\(index)", shape < 2 ? nil : "41", shape < 2 ? nil : Self.keyHex,
                    shape == 0 ? nil : "ref-9",
                ]
            }
            let archive = try Self.sealed(Self.copy(copied), inPiecesOf: size)
            #expect(archive.first == ["id", "data", "kind", ArchiveSealer.sealedColumn])
            let keys = ArchiveKeyRing([41: Self.key])
            for ((index, row), (value, shape)) in zip(archive.dropFirst().enumerated(), rows) {
                #expect(row[0] == "\(index)" && row[2] == "k\(index)")
                guard shape > 0, value != "public" else {
                    #expect(row[1] == value && row[3] == nil)
                    continue
                }
                #expect(row[1] == "redacted for ref-9 k\(index)")
                guard shape >= 2 else {
                    #expect(row[3] == nil)
                    continue
                }
                let sealed = try #require(row[3])
                #expect(try SealedValue.open(sealed, context: "events/\(index)", keys: keys) == value)
                // Moved to another row, it does not open.
                #expect(throws: SealedValue.Unopenable.self) {
                    try SealedValue.open(sealed, context: "events/999", keys: keys)
                }
            }
        }
    }

    @Test("an erased key opens nothing; an unknown key, another key or a changed byte is an error")
    func opening() throws {
        let archive = try Self.sealed(
            Self.copy([["1", "{\"name\": \"Ada\"}", "ride", "41", Self.keyHex, "ref"]]),
            inPiecesOf: 7
        )
        let sealed = try #require(archive[1][3])
        #expect(try SealedValue.open(sealed, context: "events/1", keys: ArchiveKeyRing([41: nil])) == nil)
        #expect(throws: SealedValue.Unopenable.self) {
            try SealedValue.open(sealed, context: "events/1", keys: .init())
        }
        #expect(throws: SealedValue.Unopenable.self) {
            try SealedValue.open(
                sealed,
                context: "events/1",
                keys: ArchiveKeyRing([41: [UInt8](repeating: 8, count: 32)])
            )
        }
        var changed = Array(sealed.utf8)
        changed[changed.count - 6] =
            changed[changed.count - 6] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: SealedValue.Unopenable.self) {
            try SealedValue.open(
                String(decoding: changed, as: UTF8.self),
                context: "events/1",
                keys: ArchiveKeyRing([41: Self.key])
            )
        }
        let ring = ArchiveKeyRing([41: nil], erasedActivities: [["app", "a"]])
        #expect(ring.wasErased(app: "app", activity: "a"))
        #expect(!ring.wasErased(app: "app", activity: "b"))
    }

    @Test(
        "a copy without its column or the sealing columns, or a row to seal with a broken key or no context, is refused"
    )
    func refusals() {
        var header: [UInt8] = []
        CSVLine.append(["id", "other"] + ArchiveSealer.workingColumns, to: &header)
        #expect(throws: CSVRecords.Malformed.self) { try Self.sealed(header, inPiecesOf: 4) }
        #expect(throws: CSVRecords.Malformed.self) {
            try Self.sealed(Self.copy([["1", "secret", "k", "x", "00", "ref"]]), inPiecesOf: 4)
        }
        #expect(throws: CSVRecords.Malformed.self) {
            try Self.sealed(Self.copy([["1", "secret", "k", "41", "abcd", "ref"]]), inPiecesOf: 4)
        }
    }
}

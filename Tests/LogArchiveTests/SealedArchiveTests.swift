import Foundation
import LogArchive
import PropertyBased
import Testing

@Suite("Sealing archived values")
struct SealedArchiveTests {
    static let key = [UInt8](repeating: 7, count: 32)
    static let keyHex = String(repeating: "07", count: 32)

    /// Runs `csv` through a sealer in pieces of `size` bytes; the archive's records.
    static func sealed(_ csv: [UInt8], inPiecesOf size: Int) throws -> [[String?]] {
        var sealer = ArchiveSealer()
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
        CSVLine.append(["id", "data"] + ArchiveSealer.workingColumns, to: &csv)
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

    @Test("each row's value is sealed under its key for its row alone, in pieces of any size; nothing to seal is empty")
    func sealsRows() async throws {
        let texts = Gen.int(in: 0...4).map { index -> String? in
            [nil, "", "{\"name\": \"Ada, \\\"A\\\"\"}", "line\nbreak", "token-\(index)"][index]
        }
        await propertyCheck(count: 200, input: texts.array(of: 1...12), Gen.int(in: 1...40)) { plains, size in
            let rows = plains.enumerated().map { index, plain -> [String?] in
                ["\(index)", "redacted \(index)", "41", Self.keyHex, "events/\(index)", plain]
            }
            let archive = try Self.sealed(Self.copy(rows), inPiecesOf: size)
            #expect(archive.first == ["id", "data", ArchiveSealer.sealedColumn])
            let keys = ArchiveKeyRing([41: Self.key])
            for (row, plain) in zip(archive.dropFirst(), plains) {
                #expect(row.prefix(2) == [row[0], "redacted \(row[0]!)"])
                guard let plain else {
                    #expect(row[2] == nil)
                    continue
                }
                let sealed = try #require(row[2])
                #expect(!sealed.contains(plain) || plain.isEmpty)
                #expect(try SealedValue.open(sealed, context: "events/\(row[0]!)", keys: keys) == plain)
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
            Self.copy([["1", "•••", "41", Self.keyHex, "events/1", "{\"name\": \"Ada\"}"]]),
            inPiecesOf: 7
        )
        let sealed = try #require(archive[1][2])
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

    @Test("a copy without the sealing columns, or a row to seal without its key, is refused")
    func refusals() {
        var header: [UInt8] = []
        CSVLine.append(["id", "data"], to: &header)
        #expect(throws: CSVRecords.Malformed.self) { try Self.sealed(header, inPiecesOf: 4) }
        #expect(throws: CSVRecords.Malformed.self) {
            try Self.sealed(Self.copy([["1", "x", nil, nil, "events/1", "secret"]]), inPiecesOf: 4)
        }
        #expect(throws: CSVRecords.Malformed.self) {
            try Self.sealed(Self.copy([["1", "x", "41", "abcd", "events/1", "secret"]]), inPiecesOf: 4)
        }
    }
}

import Foundation
import LogArchive
import PropertyBased
import Testing

@Suite("Sealing archived values")
struct SealedArchiveTests {
    static let key = [UInt8](repeating: 7, count: 32)
    static let keyHex = String(repeating: "07", count: 32)
    static let otherKey = [UInt8](repeating: 9, count: 32)
    static let otherKeyHex = String(repeating: "09", count: 32)
    static let keys = ArchiveKeyRing([41: key, 42: otherKey])

    /// Runs `csv` through a sealer of `data` in pieces of `size` bytes; the archive's records. The
    /// redaction names the reference and the row's `kind`; "public" holds nothing personal.
    static func sealed(_ csv: [UInt8], inPiecesOf size: Int) throws -> [[String?]] {
        var sealer = try ArchiveSealer(table: "events", rowKey: "id", column: "data") { value, reference, column in
            value == "public" ? nil : "redacted for \(reference) \(column("kind") ?? "?")"
        }
        var out: [UInt8] = []
        for start in stride(from: 0, to: csv.count, by: size) {
            try csv[start..<min(start + size, csv.count)].withUnsafeBytes { piece in
                try sealer.feed(piece) { out += $0 }
            }
        }
        try sealer.finish { out += $0 }
        return try CSVRecordsTests.read(String(decoding: out, as: UTF8.self), inPiecesOf: 5)
    }

    static func copy(_ rows: [[String?]]) -> [UInt8] {
        var csv: [UInt8] = []
        CSVLine.append(["id", "data", "kind"] + ArchiveSealer.workingColumns, to: &csv)
        for row in rows { CSVLine.append(row, to: &csv) }
        return csv
    }

    /// Each data row's sealed value opened in order, as readers do.
    static func opened(_ archive: [[String?]], keys: ArchiveKeyRing = keys) throws -> [String?] {
        var unsealer = ArchiveUnsealer(table: "events", keys: keys)
        return try archive.dropFirst().map { row in try row[3].flatMap { try unsealer.open($0, rowKey: row[0]!) } }
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
        "each row is redacted and the values of a run under one key sealed together in its first row, in pieces of any size; without a reference a row is as it came, without a key or anything personal it seals nothing"
    )
    func sealsRuns() async throws {
        let values = Gen.int(in: 0...4).map {
            ["public", "", "{\"name\": \"Ada, \\\"A\\\"\"}", "line\nbreak", "token"][$0]
        }
        let row = zip(values, Gen.int(in: 0...3))
        await propertyCheck(count: 200, input: row.array(of: 1...12), Gen.int(in: 1...40)) { rows, size in
            // Shape 0: no reference; 1: no key; 2: key 41; 3: key 42.
            let copied = rows.enumerated().map { index, row -> [String?] in
                let (value, shape) = row
                return [
                    "\(index)", value, "k\(index)", shape < 2 ? nil : "\(39 + shape)",
                    shape < 2 ? nil : (shape == 2 ? Self.keyHex : Self.otherKeyHex), shape == 0 ? nil : "ref-9",
                ]
            }
            let archive = try Self.sealed(Self.copy(copied), inPiecesOf: size)
            #expect(archive.first == ["id", "data", "kind", ArchiveSealer.sealedColumn])
            #expect(archive.count == rows.count + 1)
            let opened = try Self.opened(archive)
            var run: (key: Int, first: Int)?
            for ((index, row), (value, shape)) in zip(archive.dropFirst().enumerated(), rows) {
                #expect(row[0] == "\(index)" && row[2] == "k\(index)")
                guard shape > 0, value != "public" else {
                    #expect(row[1] == value && row[3] == nil)
                    continue
                }
                #expect(row[1] == "redacted for ref-9 k\(index)")
                guard shape >= 2 else {
                    #expect(row[3] == nil && opened[index] == nil)
                    continue
                }
                #expect(opened[index] == value)
                // A run is the rows sealed under one key one after another: its first row holds
                // the values, each later one where they are.
                let key = 39 + shape
                if let current = run, current.key == key {
                    #expect(row[3] == "v2.\(key).@\(current.first)")
                } else {
                    run = (key, index)
                    #expect(row[3]?.hasPrefix("v2.\(key).") == true && row[3]?.contains("@") == false)
                    // Read as another row's, it does not open.
                    var unsealer = ArchiveUnsealer(table: "events", keys: Self.keys)
                    #expect(throws: SealedRun.Unopenable.self) { try unsealer.open(row[3]!, rowKey: "999") }
                }
            }
        }
    }

    @Test("a run is closed at a thousand rows: a long stream's values are sealed in several runs, each opened")
    func longRuns() throws {
        let rows = (0..<2_500).map { index -> [String?] in
            ["\(index)", "value \(index)", "k", "41", Self.keyHex, "ref"]
        }
        let archive = try Self.sealed(Self.copy(rows), inPiecesOf: 4_096)
        let firsts = archive.dropFirst().filter { $0[3]?.contains("@") == false }.map { $0[0] }
        #expect(firsts == ["0", "1000", "2000"])
        #expect(try Self.opened(archive) == rows.map { $0[1] })
    }

    @Test(
        "an erased key opens nothing; an unknown key, another key, a changed byte, a row read without its run's first, or one not in it, is an error"
    )
    func opening() throws {
        let archive = try Self.sealed(
            Self.copy([
                ["1", "{\"name\": \"Ada\"}", "ride", "41", Self.keyHex, "ref"],
                ["2", "{\"name\": \"Ada L\"}", "ride", "41", Self.keyHex, "ref"],
            ]),
            inPiecesOf: 7
        )
        let first = try #require(archive[1][3])
        let second = try #require(archive[2][3])
        #expect(try Self.opened(archive) == ["{\"name\": \"Ada\"}", "{\"name\": \"Ada L\"}"])
        #expect(try Self.opened(archive, keys: ArchiveKeyRing([41: nil])) == [nil, nil])
        func opens(_ sealed: String, as rowKey: String = "1", keys: ArchiveKeyRing) throws -> String? {
            var unsealer = ArchiveUnsealer(table: "events", keys: keys)
            return try unsealer.open(sealed, rowKey: rowKey)
        }
        #expect(throws: SealedRun.Unopenable.self) { try opens(first, keys: .init()) }
        #expect(throws: SealedRun.Unopenable.self) {
            try opens(first, keys: ArchiveKeyRing([41: [UInt8](repeating: 8, count: 32)]))
        }
        var changed = Array(first.utf8)
        changed[changed.count - 6] =
            changed[changed.count - 6] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: SealedRun.Unopenable.self) {
            try opens(String(decoding: changed, as: UTF8.self), keys: Self.keys)
        }
        #expect(throws: SealedRun.Unopenable.self) { try opens(second, as: "2", keys: Self.keys) }
        var unsealer = ArchiveUnsealer(table: "events", keys: Self.keys)
        _ = try unsealer.open(first, rowKey: "1")
        #expect(throws: SealedRun.Unopenable.self) { try unsealer.open(second, rowKey: "3") }
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

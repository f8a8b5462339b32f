import Foundation
import LogArchive
import PropertyBased
import PropertyChecks
import Testing

@Suite("Sealing archived values")
struct SealedArchiveTests {
    static let root = ArchiveKeyTree.newRoot()
    static let device = UUID()
    static let deviceKey = [UInt8](repeating: 7, count: 32)
    static let keys = ArchiveKeyRing(nodes: [root], devices: [device: deviceKey])
    /// Activity `a` is sealed with its device, `b` without one, `c` was erased; `none` is no one's.
    static let sealings: [ArchiveSealer.Activity: ArchiveSealer.Sealing] = [
        ["app", "a"]: sealing("a", device: device, deviceKey: deviceKey),
        ["app", "b"]: sealing("b", device: nil, deviceKey: nil),
        ["app", "c"]: ArchiveSealer.Sealing(reference: "ref-9", key: nil),
    ]

    static func sealing(_ activity: String, device: UUID?, deviceKey: [UInt8]?) -> ArchiveSealer.Sealing {
        let leaf = ArchiveKeyTree.leaf(app: "app", activity: activity)
        return ArchiveSealer.Sealing(
            reference: "ref-9",
            key: (
                SealedRun.KeyName(leaf: leaf, device: device),
                ArchiveKeyTree.sealingKey(leaf: ArchiveKeyTree.key(of: leaf, from: root), device: deviceKey)
            )
        )
    }

    /// How `activity`'s first row names its key.
    static func keyName(_ activity: String) -> String {
        let leaf = String(ArchiveKeyTree.leaf(app: "app", activity: activity), radix: 16)
        return "v2." + String(repeating: "0", count: 12 - leaf.count) + leaf + "."
            + (activity == "a" ? device.uuidString.lowercased() : "") + "."
    }

    /// Runs `csv` through a sealer of `data` in pieces of `size` bytes; the archive's records. The
    /// redaction names the reference and the row's `kind`; "public" holds nothing personal.
    static func sealed(_ csv: [UInt8], inPiecesOf size: Int) throws -> [[String?]] {
        var sealer = try ArchiveSealer(table: "events", rowKey: "id", column: "data") { value, reference, column in
            value == "public" ? nil : "redacted for \(reference) \(column("kind") ?? "?")"
        }
        sealer.provide(sealings)
        var out: [UInt8] = []
        for start in stride(from: 0, to: csv.count, by: size) {
            try csv[start..<min(start + size, csv.count)].withUnsafeBytes { piece in
                try sealer.feed(piece) { out += $0 }
            }
        }
        try sealer.finish { out += $0 }
        return try CSVRecordsTests.read(String(decoding: out, as: UTF8.self), inPiecesOf: 5)
    }

    static let header = ["id", "app_id", "activity_id", "data", "kind"]

    static func copy(_ rows: [[String?]]) -> [UInt8] {
        var csv: [UInt8] = []
        CSVLine.append(header, to: &csv)
        for row in rows { CSVLine.append(row, to: &csv) }
        return csv
    }

    /// Each data row's sealed value opened in order, as readers do.
    static func opened(_ archive: [[String?]], keys: ArchiveKeyRing = keys) throws -> [String?] {
        var unsealer = ArchiveUnsealer(table: "events", keys: keys)
        return try archive.dropFirst().map { row in try row[5].flatMap { try unsealer.open($0, rowKey: row[0]!) } }
    }

    @Test("records written as PostgreSQL writes them read back the same, NULL apart from the empty text")
    func linesRoundTrip() async {
        let shapes: [String?] = [nil, "", "a,b", "say \"hi\"", "two\nlines", "\r", "\\.", "é😀", "{\"k\": [1]}"]
        let field = Gen.int(in: 0...shapes.count * 2).map { $0 < shapes.count ? shapes[$0] : "w\($0)" }
        await checkProperty(count: 300, input: field.array(of: 1...5).array(of: 0...8)) { records in
            var csv: [UInt8] = []
            for record in records { CSVLine.append(record, to: &csv) }
            let read = try CSVRecordsTests.read(String(decoding: csv, as: UTF8.self), inPiecesOf: 3)
            #expect(read == records)
        }
    }

    @Test(
        "each row is redacted and the values of a run under one key sealed together in its first row, in pieces of any size; a row of no activity given is as it came, one without a key or anything personal seals nothing"
    )
    func sealsRuns() async throws {
        let values = Gen.int(in: 0...4).map {
            ["public", "", "{\"name\": \"Ada, \\\"A\\\"\"}", "line\nbreak", "token"][$0]
        }
        let activities = ["none", "c", "a", "b"]
        let row = zip(values, Gen.int(in: 0...3))
        await checkProperty(count: 200, input: row.array(of: 1...12), Gen.int(in: 1...40)) { rows, size in
            let copied = rows.enumerated().map { index, row -> [String?] in
                ["\(index)", "app", activities[row.1], row.0, "k\(index)"]
            }
            let archive = try Self.sealed(Self.copy(copied), inPiecesOf: size)
            #expect(archive.first == Self.header + [ArchiveSealer.sealedColumn])
            #expect(archive.count == rows.count + 1)
            let opened = try Self.opened(archive)
            var run: (activity: String, first: Int)?
            for ((index, row), (value, shape)) in zip(archive.dropFirst().enumerated(), rows) {
                #expect(row[0] == "\(index)" && row[4] == "k\(index)")
                guard shape > 0, value != "public" else {
                    #expect(row[3] == value && row[5] == nil)
                    continue
                }
                #expect(row[3] == "redacted for ref-9 k\(index)")
                guard shape >= 2 else {
                    #expect(row[5] == nil && opened[index] == nil)
                    continue
                }
                #expect(opened[index] == value)
                // A run is the rows sealed under one key one after another: its first row holds
                // the values, each later one where they are.
                let activity = activities[shape]
                if let current = run, current.activity == activity {
                    #expect(row[5] == "v2.@\(current.first)")
                } else {
                    run = (activity, index)
                    #expect(row[5]?.hasPrefix(Self.keyName(activity)) == true && row[5]?.contains("@") == false)
                    // Read as another row's, it does not open.
                    var unsealer = ArchiveUnsealer(table: "events", keys: Self.keys)
                    #expect(throws: SealedRun.Unopenable.self) { try unsealer.open(row[5]!, rowKey: "999") }
                }
            }
        }
    }

    @Test("a run is closed at a thousand rows: a long stream's values are sealed in several runs, each opened")
    func longRuns() throws {
        let rows = (0..<2_500).map { index -> [String?] in ["\(index)", "app", "a", "value \(index)", "k"] }
        let archive = try Self.sealed(Self.copy(rows), inPiecesOf: 4_096)
        let firsts = archive.dropFirst().filter { $0[5]?.contains("@") == false }.map { $0[0] }
        #expect(firsts == ["0", "1000", "2000"])
        #expect(try Self.opened(archive) == rows.map { $0[3] })
    }

    @Test(
        "a punctured leaf or an erased device opens nothing; an unknown device, another tree, a changed byte, a row read without its run's first, or one not in it, is an error"
    )
    func opening() throws {
        let archive = try Self.sealed(
            Self.copy([
                ["1", "app", "a", "{\"name\": \"Ada\"}", "ride"],
                ["2", "app", "a", "{\"name\": \"Ada L\"}", "ride"],
                ["3", "app", "b", "{\"name\": \"Bo\"}", "ride"],
            ]),
            inPiecesOf: 7
        )
        let (first, second, third) = (
            try #require(archive[1][5]), try #require(archive[2][5]), try #require(archive[3][5])
        )
        #expect(try Self.opened(archive) == ["{\"name\": \"Ada\"}", "{\"name\": \"Ada L\"}", "{\"name\": \"Bo\"}"])
        let leafA = ArchiveKeyTree.leaf(app: "app", activity: "a")
        let punctured = ArchiveKeyRing(
            nodes: ArchiveKeyTree.puncture(leafA, in: Self.root),
            devices: [Self.device: Self.deviceKey]
        )
        #expect(try Self.opened(archive, keys: punctured) == [nil, nil, "{\"name\": \"Bo\"}"])
        #expect(punctured.wasErased(app: "app", activity: "a") && !punctured.wasErased(app: "app", activity: "b"))
        let deviceErased = ArchiveKeyRing(nodes: [Self.root], devices: [Self.device: nil])
        #expect(try Self.opened(archive, keys: deviceErased) == [nil, nil, "{\"name\": \"Bo\"}"])
        #expect(deviceErased.wasErased(device: Self.device) && !Self.keys.wasErased(device: Self.device))
        func opens(_ sealed: String, as rowKey: String = "1", keys: ArchiveKeyRing) throws -> String? {
            var unsealer = ArchiveUnsealer(table: "events", keys: keys)
            return try unsealer.open(sealed, rowKey: rowKey)
        }
        #expect(throws: SealedRun.Unopenable.self) { try opens(first, keys: ArchiveKeyRing(nodes: [Self.root])) }
        #expect(throws: SealedRun.Unopenable.self) {
            try opens(
                first,
                keys: ArchiveKeyRing(nodes: [ArchiveKeyTree.newRoot()], devices: [Self.device: Self.deviceKey])
            )
        }
        #expect(throws: SealedRun.Unopenable.self) { try opens(third, as: "3", keys: ArchiveKeyRing()) }
        var changed = Array(first.utf8)
        changed[changed.count - 6] =
            changed[changed.count - 6] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        #expect(throws: SealedRun.Unopenable.self) {
            try opens(String(decoding: changed, as: UTF8.self), keys: Self.keys)
        }
        #expect(throws: SealedRun.Unopenable.self) { try opens(second, as: "2", keys: Self.keys) }
        var unsealer = ArchiveUnsealer(table: "events", keys: Self.keys)
        _ = try unsealer.open(first, rowKey: "1")
        #expect(throws: SealedRun.Unopenable.self) { try unsealer.open(second, rowKey: "4") }
        #expect(throws: SealedRun.Unopenable.self) { try opens("v2.12.x.abc", keys: Self.keys) }
        #expect(throws: SealedRun.Unopenable.self) { try opens("v1.000000000001..abc", keys: Self.keys) }
    }

    @Test("a copy without its column, its row key or its activity's, or a row to seal without its row key, is refused")
    func refusals() {
        for missing in ["data", "id", "app_id", "activity_id"] {
            var header: [UInt8] = []
            CSVLine.append(Self.header.filter { $0 != missing }, to: &header)
            #expect(throws: CSVRecords.Malformed.self) { try Self.sealed(header, inPiecesOf: 4) }
        }
        #expect(throws: CSVRecords.Malformed.self) {
            try Self.sealed(Self.copy([[nil, "app", "a", "secret", "k"]]), inPiecesOf: 4)
        }
    }
}

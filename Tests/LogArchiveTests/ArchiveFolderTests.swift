import Foundation
import LogArchive
import Testing

@Suite("Archives of retired partitions")
struct ArchiveFolderTests {
    static func temporaryFolder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("archive-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static let contents = ArchiveFolder.Contents(
        table: "events",
        partition: "events_20261126_0000",
        from: "2026-11-26T00:00:00.000000Z",
        to: "2026-11-27T00:00:00.000000Z",
        firstPosition: 7,
        lastPosition: 9
    )

    /// Writes an archive of `rows` data rows (a header first), in pieces as COPY sends them.
    static func write(rows: Int, to folder: ArchiveFolder) throws -> ArchiveManifest {
        try folder.write(contents, archivedAt: "2026-11-28T00:00:00Z") { write in
            var lines = ["position,data\n"]
            lines += (0..<rows).map { "\($0),\"{\"\"n\"\": \($0)}\"\n" }
            for line in lines { try Array(line.utf8).withUnsafeBytes(write) }
            return rows
        }
    }

    @Test("an archive is written, listed by its manifest, and read back row by row")
    func roundTrip() throws {
        let folder = ArchiveFolder(path: try Self.temporaryFolder())
        let manifest = try Self.write(rows: 20_000, to: folder)
        #expect(manifest.rows == 20_000)
        #expect(manifest.file.name == "events.csv.gz")
        #expect(manifest.file.sha256.count == 64)
        #expect(try folder.manifests() == [manifest])
        var read: [[String?]] = []
        try folder.read(manifest) { header, row in
            #expect(header == ["position", "data"])
            read.append(row)
        }
        #expect(read.count == 20_000)
        #expect(read.last == ["19999", "{\"n\": 19999}"])
        // Nothing partial is left, and the file is gzip that any tool reads.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == [manifest.partition])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: "\(folder.path)/\(manifest.partition)/events.csv.gz"))
        #expect(Array(bytes.prefix(2)) == [0x1f, 0x8b])
    }

    @Test("a changed byte, a missing file or a row count that disagrees is found on reading")
    func damage() throws {
        let folder = ArchiveFolder(path: try Self.temporaryFolder())
        let manifest = try Self.write(rows: 100, to: folder)
        let file = "\(folder.path)/\(manifest.partition)/events.csv.gz"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: file))
        bytes[bytes.count - 5] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: file))
        #expect(throws: (any Error).self) { try folder.read(manifest) { _, _ in } }

        var wrongCount = try Self.write(rows: 100, to: folder)
        wrongCount.rows = 99
        #expect(throws: ArchiveFolder.Problem.self) { try folder.read(wrongCount) { _, _ in } }

        try FileManager.default.removeItem(atPath: file)
        #expect(throws: ArchiveFolder.Problem.self) { try folder.read(manifest) { _, _ in } }
    }

    @Test("writing a partition again replaces its archive; a folder left partial is not listed")
    func rewrite() throws {
        let folder = ArchiveFolder(path: try Self.temporaryFolder())
        _ = try Self.write(rows: 3, to: folder)
        try FileManager.default.createDirectory(
            atPath: "\(folder.path)/events_20261127_0000.partial",
            withIntermediateDirectories: false
        )
        let again = try Self.write(rows: 5, to: folder)
        #expect(try folder.manifests() == [again])
    }
}

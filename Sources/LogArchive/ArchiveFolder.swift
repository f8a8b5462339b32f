import Foundation

/// A folder of archives, one folder in it per retired partition: `<partition>/manifest.json`
/// and `<partition>/<table>.csv.gz` (gzip-compressed CSV with a header line, as PostgreSQL's
/// `COPY … WITH (FORMAT csv, HEADER)` writes it: `psql \copy` restores it, DuckDB reads it).
///
/// An archive is first written under `<partition>.partial`, flushed to disk, read back and
/// checked (its size, its SHA-256, its row count), and only then renamed into place: a folder
/// without `.partial` holds a complete, checked archive.
public struct ArchiveFolder: Sendable {
    /// An archive that does not match its manifest, or a folder that cannot be read.
    public struct Problem: Error, CustomStringConvertible {
        public let description: String

        public init(description: String) {
            self.description = description
        }
    }

    /// What an archive covers, known before its rows are written.
    public struct Contents: Sendable {
        public var table: String
        public var partition: String
        public var from: String
        public var to: String
        public var firstPosition: Int64?
        public var lastPosition: Int64?

        public init(
            table: String,
            partition: String,
            from: String,
            to: String,
            firstPosition: Int64? = nil,
            lastPosition: Int64? = nil
        ) {
            self.table = table
            self.partition = partition
            self.from = from
            self.to = to
            self.firstPosition = firstPosition
            self.lastPosition = lastPosition
        }
    }

    public let path: String

    public init(path: String) {
        self.path = path
    }

    /// Creates the folder if it is missing, and throws a `Problem` unless archives can be
    /// written in it: checked when the server starts, rather than when a partition is due.
    public func prepare() throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw Problem(description: "cannot create the archive folder \(path): \(error.localizedDescription)")
        }
        guard FileManager.default.isWritableFile(atPath: path) else {
            throw Problem(description: "cannot write in the archive folder \(path)")
        }
    }

    /// Writes, checks and puts in place the archive of `contents`: `copy` writes the CSV (header
    /// line first) through the function it is given and returns how many data rows it wrote.
    /// `pause` is called after each row read back in the check (a job that paces itself rests
    /// there; what it throws ends the write). An archive of the same partition already in place
    /// is replaced. Returns its manifest.
    public func write(
        _ contents: Contents,
        archivedAt: String,
        pause: () throws -> Void = {},
        copy: ((UnsafeRawBufferPointer) throws -> Void) throws -> Int
    ) throws -> ArchiveManifest {
        let files = FileManager.default
        let final = "\(path)/\(contents.partition)"
        let partial = final + ".partial"
        try files.createDirectory(atPath: path, withIntermediateDirectories: true)
        if files.fileExists(atPath: partial) { try files.removeItem(atPath: partial) }
        try files.createDirectory(atPath: partial, withIntermediateDirectories: false)

        let name = "\(contents.table).csv.gz"
        let writer = try GzipFileWriter(creating: "\(partial)/\(name)")
        let rows = try copy { try writer.write($0) }
        let (bytes, sha256) = try writer.finish()
        let manifest = ArchiveManifest(
            table: contents.table,
            partition: contents.partition,
            from: contents.from,
            to: contents.to,
            rows: rows,
            firstPosition: contents.firstPosition,
            lastPosition: contents.lastPosition,
            file: .init(name: name, bytes: bytes, sha256: sha256),
            archivedAt: archivedAt
        )
        try Self.check(manifest, in: partial) { _, _ in try pause() }

        let manifestFile = try ArchiveFile.create("\(partial)/manifest.json")
        try manifest.encoded().withUnsafeBytes { try manifestFile.write($0) }
        try manifestFile.flush()
        try ArchiveFile.flushFolder(partial)
        if files.fileExists(atPath: final) { try files.removeItem(atPath: final) }
        try files.moveItem(atPath: partial, toPath: final)
        try ArchiveFile.flushFolder(path)
        return manifest
    }

    /// The manifests of the complete archives in the folder, oldest first within each table.
    public func manifests() throws -> [ArchiveManifest] {
        let files = FileManager.default
        guard files.fileExists(atPath: path) else {
            throw Problem(description: "no archive folder at \(path)")
        }
        return try files.contentsOfDirectory(atPath: path)
            .filter { !$0.hasSuffix(".partial") && files.fileExists(atPath: "\(path)/\($0)/manifest.json") }
            .map { folder in
                let data = try Data(contentsOf: URL(fileURLWithPath: "\(path)/\(folder)/manifest.json"))
                do {
                    return try ArchiveManifest.decode(data)
                } catch {
                    throw Problem(description: "\(path)/\(folder)/manifest.json cannot be read: \(error)")
                }
            }
            .sorted { ($0.table, $0.partition) < ($1.table, $1.partition) }
    }

    /// Reads the archive of `manifest` and hands each data row to `row`, the header line's
    /// column names with it; then checks the file against its manifest (size, SHA-256, rows),
    /// and throws a `Problem` if it does not match.
    public func read(_ manifest: ArchiveManifest, row: ([String], [String?]) throws -> Void) throws {
        try Self.check(manifest, in: "\(path)/\(manifest.partition)", row: row)
    }

    private static func check(
        _ manifest: ArchiveManifest,
        in folder: String,
        row: ([String], [String?]) throws -> Void
    ) throws {
        let file = "\(folder)/\(manifest.file.name)"
        guard FileManager.default.fileExists(atPath: file) else {
            throw Problem(description: "\(file) is missing")
        }
        var records = CSVRecords()
        var header: [String]?
        let (bytes, sha256) = try GzipFileReader.read(file) { piece in
            try records.feed(piece) { fields in
                if let header {
                    try row(header, fields)
                } else {
                    header = fields.map { $0 ?? "" }
                }
            }
        }
        try records.finish()
        let rows = max(records.count - 1, 0)
        guard bytes == manifest.file.bytes, sha256 == manifest.file.sha256 else {
            throw Problem(
                description: "\(file) is \(bytes) bytes with SHA-256 \(sha256); its manifest says "
                    + "\(manifest.file.bytes) bytes with SHA-256 \(manifest.file.sha256)"
            )
        }
        guard header != nil, rows == manifest.rows else {
            throw Problem(description: "\(file) holds \(rows) rows; its manifest says \(manifest.rows)")
        }
    }
}

public import Foundation

/// What an archive of one retired partition holds, written beside its data as `manifest.json`:
/// enough to check the data file without Liveline (its size and SHA-256) and to know what it
/// covers without reading it.
public struct ArchiveManifest: Codable, Sendable, Equatable {
    /// The version of this layout: `liveline-archive/2` since archives are sealed (personal
    /// values redacted, the originals sealed in a column `sealed`); `liveline-archive/1` before.
    public static let currentFormat = "liveline-archive/2"

    public var format = Self.currentFormat
    /// The table the partition belonged to (`events`, `deliveries`, …).
    public var table: String
    /// The partition's own name, which is also the archive's folder.
    public var partition: String
    /// The times the partition covered, `from` included, `to` excluded (`-infinity` for the
    /// rows from before partitions); for `events`, the times their streams began.
    public var from: String
    public var to: String
    /// The data rows in `file`, its header line not counted.
    public var rows: Int
    /// For `events`: the lowest and highest position archived (`nil` when there are no rows).
    public var firstPosition: Int64?
    public var lastPosition: Int64?
    /// The data: gzip-compressed CSV with a header line.
    public var file: DataFile
    /// When the archive was written and checked (RFC 3339).
    public var archivedAt: String

    public struct DataFile: Codable, Sendable, Equatable {
        public var name: String
        public var bytes: Int
        /// Of the compressed file, lowercase hex.
        public var sha256: String

        public init(name: String, bytes: Int, sha256: String) {
            self.name = name
            self.bytes = bytes
            self.sha256 = sha256
        }
    }

    public init(
        table: String,
        partition: String,
        from: String,
        to: String,
        rows: Int,
        firstPosition: Int64? = nil,
        lastPosition: Int64? = nil,
        file: DataFile,
        archivedAt: String
    ) {
        self.table = table
        self.partition = partition
        self.from = from
        self.to = to
        self.rows = rows
        self.firstPosition = firstPosition
        self.lastPosition = lastPosition
        self.file = file
        self.archivedAt = archivedAt
    }

    /// The manifest as written: sorted keys, indented, one trailing newline.
    public func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(self) + Data("\n".utf8)
    }

    public static func decode(_ data: Data) throws -> ArchiveManifest {
        try JSONDecoder().decode(ArchiveManifest.self, from: data)
    }
}

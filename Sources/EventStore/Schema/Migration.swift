import Crypto
public import Foundation

/// One numbered schema change: a plain SQL file `NNNN_name.sql` in `migrations/`.
public struct Migration: Sendable, Equatable {
    public let version: Int
    public let name: String
    public let sql: String
    /// SHA-256 of the file's bytes, hex encoded: an applied migration must never change.
    public let checksum: String

    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
        self.checksum = sha256Hex(sql)
    }

    /// The file name it was loaded from.
    public var fileName: String { String(format: "%04d_", version) + name + ".sql" }

    /// Loads every `NNNN_name.sql` file of `directory`, ordered by number.
    ///
    /// - Throws: `MigrationError` when the folder is missing, a `.sql` file is misnamed, or two
    ///   files share a number.
    public static func load(from directory: URL) throws -> [Migration] {
        let files: [String]
        do {
            files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw MigrationError.directoryUnreadable(path: directory.path)
        }
        var migrations: [Migration] = []
        for file in files where file.hasSuffix(".sql") {
            let stem = file.dropLast(4)
            guard let underscore = stem.firstIndex(of: "_"),
                let version = Int(stem[..<underscore]), version > 0,
                stem[..<underscore].allSatisfy(\.isASCII)
            else {
                throw MigrationError.badFileName(file)
            }
            let sql = try String(contentsOf: directory.appending(path: file), encoding: .utf8)
            migrations.append(
                Migration(version: version, name: String(stem[stem.index(after: underscore)...]), sql: sql)
            )
        }
        migrations.sort { $0.version < $1.version }
        for (earlier, later) in zip(migrations, migrations.dropFirst()) where earlier.version == later.version {
            throw MigrationError.duplicateVersion(earlier.version)
        }
        return migrations
    }
}

/// SHA-256 of a schema file's bytes, hex encoded: what the database records of what it applied.
func sha256Hex(_ sql: String) -> String {
    SHA256.hash(data: Data(sql.utf8)).map { String(format: "%02x", $0) }.joined()
}

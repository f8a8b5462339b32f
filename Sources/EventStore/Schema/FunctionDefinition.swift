public import Foundation

/// The current definition of one stored function: `migrations/functions/NAME.sql`, a
/// `CREATE OR REPLACE FUNCTION NAME` (with its grants) that is applied after the numbered
/// migrations whenever its text changes. Unlike a migration, the file is edited in place: its
/// history is the repository's.
public struct FunctionDefinition: Sendable, Equatable {
    /// The function's name, which is the file's.
    public let name: String
    public let sql: String
    /// SHA-256 of the file's bytes, hex encoded: a changed file is applied again.
    public let checksum: String

    public init(name: String, sql: String) {
        self.name = name
        self.sql = sql
        self.checksum = sha256Hex(sql)
    }

    /// The file's path in the migrations folder.
    public var fileName: String { "functions/\(name).sql" }

    /// Loads every `NAME.sql` file of `directory`, ordered by name; none when it does not exist.
    ///
    /// - Throws: `MigrationError.badFunctionFileName` for a `.sql` file whose name is not a
    ///   lower-case SQL identifier.
    public static func load(from directory: URL) throws -> [FunctionDefinition] {
        guard let files = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return [] }
        var definitions: [FunctionDefinition] = []
        for file in files where file.hasSuffix(".sql") {
            let name = String(file.dropLast(4))
            guard let first = name.first, first == "_" || ("a"..."z").contains(first),
                name.allSatisfy({ $0 == "_" || ("a"..."z").contains($0) || ("0"..."9").contains($0) })
            else {
                throw MigrationError.badFunctionFileName("functions/\(file)")
            }
            let sql = try String(contentsOf: directory.appending(path: file), encoding: .utf8)
            definitions.append(FunctionDefinition(name: name, sql: sql))
        }
        return definitions.sorted { $0.name < $1.name }
    }
}

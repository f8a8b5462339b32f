public import Foundation

/// The schema the numbered migrations up to `version` build, in one step for a new database:
/// `migrations/baseline/NNNN_schema.sql` (roles, types, tables, views, keys, indexes, grants and
/// the rows the migrations seed) and `NNNN_triggers.sql`. A new database runs the first, then the
/// function definitions (they name tables), then the second (triggers name functions), instead of
/// replaying every migration and every superseded function text.
///
/// Both files are written by `scripts/update-baseline.sh` from a database migrated through the
/// numbered files, and the tests check that both ways reach the same schema and rows. They are
/// also the schema under review: every change to a table, view, index, trigger or grant shows in
/// their diff. A database that has migrations applied upgrades through the numbered files.
public struct Baseline: Sendable, Equatable {
    /// The last numbered migration the baseline stands for.
    public let version: Int
    public let schema: String
    public let triggers: String

    public init(version: Int, schema: String, triggers: String) {
        self.version = version
        self.schema = schema
        self.triggers = triggers
    }

    /// The files' names in the migrations folder.
    public var fileNames: [String] {
        let prefix = "baseline/" + String(format: "%04d_", version)
        return [prefix + "schema.sql", prefix + "triggers.sql"]
    }

    /// The baseline in `directory` (`NNNN_schema.sql` and `NNNN_triggers.sql`); none when the
    /// folder does not exist or is empty.
    ///
    /// - Throws: `MigrationError.badBaseline` when the folder holds anything else.
    public static func load(from directory: URL) throws -> Baseline? {
        guard let files = try? FileManager.default.contentsOfDirectory(atPath: directory.path),
            !files.isEmpty
        else { return nil }
        let stems = Set(files.map { $0.prefix(5) })
        guard stems.count == 1, let stem = stems.first, let version = Int(stem.dropLast()), stem.last == "_",
            Set(files) == ["\(stem)schema.sql", "\(stem)triggers.sql"]
        else {
            throw MigrationError.badBaseline(files.sorted())
        }
        func read(_ name: String) throws -> String {
            try String(contentsOf: directory.appending(path: "\(stem)\(name).sql"), encoding: .utf8)
        }
        return Baseline(version: version, schema: try read("schema"), triggers: try read("triggers"))
    }
}

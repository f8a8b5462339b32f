/// Why migrations cannot be applied, in words an operator can act on.
public enum MigrationError: Error, Equatable, CustomStringConvertible {
    case directoryUnreadable(path: String)
    case badFileName(String)
    /// A file of `migrations/functions/` whose name is not a function's.
    case badFunctionFileName(String)
    case duplicateVersion(Int)
    /// An applied migration's file no longer matches what was applied.
    case edited(version: Int, name: String, applied: String, file: String)
    /// The database has a migration this build does not know: it was migrated by a newer Liveline.
    case unknownApplied(version: Int, name: String)
    /// `migrations/baseline/` holds something other than one `NNNN_schema.sql` and its `NNNN_triggers.sql`.
    case badBaseline([String])
    /// The baseline stands for migrations up to `version`, and some of those files are missing.
    case baselineAheadOfMigrations(version: Int)

    public var description: String {
        switch self {
        case .directoryUnreadable(let path):
            "cannot read the migrations folder \(path) (set LIVELINE_MIGRATIONS or --migrations)"
        case .badFileName(let file):
            "migration file \(file) is not named NNNN_name.sql"
        case .badFunctionFileName(let file):
            "function file \(file) is not named after the function it defines (lower-case letters, digits, _)"
        case .duplicateVersion(let version):
            "two migration files share the number \(version)"
        case .edited(let version, let name, let applied, let file):
            "migration \(version) (\(name)) was edited after it was applied "
                + "(applied checksum \(applied.prefix(12))…, file \(file.prefix(12))…): "
                + "restore the original file and put the change in a new migration"
        case .unknownApplied(let version, let name):
            "the database has migration \(version) (\(name)) that this Liveline does not know: "
                + "it was migrated by a newer version"
        case .badBaseline(let files):
            "migrations/baseline/ must hold NNNN_schema.sql and NNNN_triggers.sql of one number, "
                + "not \(files.joined(separator: ", ")) (scripts/update-baseline.sh writes them)"
        case .baselineAheadOfMigrations(let version):
            "the baseline stands for migrations 1 to \(version), and the migrations folder lacks some of them"
        }
    }
}

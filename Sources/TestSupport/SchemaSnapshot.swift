import Crypto
import EmbeddedPostgres
public import Foundation

/// The schema of a freshly migrated database, committed as `migrations/snapshot/schema.sql` so
/// that every change to a table, index, view, trigger, grant or function shows as a diff in the
/// commit that makes it. It is `pg_dump --schema-only` with what varies between machines and runs
/// left out (the versions that made the dump, session settings, owners, the random key of
/// `\restrict`, the day the tables split by time in migration 0023 were migrated, which ends
/// their partitions of older rows), without pg_dump's comments (which only name the statement below them), and each function's body replaced
/// by its size and checksum: a body's text is reviewed in `migrations/functions/`, where it lives.
public enum SchemaSnapshot {
    /// The committed snapshot.
    public static let file = TestDatabase.migrationsDirectory.appending(path: "snapshot").appending(path: "schema.sql")

    /// The snapshot of the database at `connectionString`.
    public static func take(of connectionString: String) throws -> String {
        normalized(try EmbeddedPostgres.dumpSchema(connectionString: connectionString))
    }

    static func normalized(_ dump: String) -> String {
        let body = /AS \$(?<tag>[A-Za-z_]*)\$(?<body>.*?)\$\k<tag>\$/.dotMatchesNewlines()
        let withoutBodies = dump.replacing(body) { match in
            let text = String(match.output.body)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).count
            let digest = SHA256.hash(data: Data(text.utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
            return "AS $$ body of \(lines) lines, sha256 \(digest)… $$"
        }
        // A time that is not the log's fixed start of partitions, 2000-01-01.
        let migrationDay = /'(?!2000-01-01)\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\+00'/
        var kept: [Substring] = []
        for line in withoutBodies.split(separator: "\n", omittingEmptySubsequences: false) {
            let varying = ["-- Dumped ", "SET ", "SELECT pg_catalog.set_config(", "\\restrict ", "\\unrestrict "]
            if varying.contains(where: { line.hasPrefix($0) }) { continue }
            // pg_dump's comments: a frame of `--` lines naming the statement that follows.
            if line == "--" || line.hasPrefix("-- Name: ") || line.hasPrefix("-- PostgreSQL database dump") { continue }
            if line.isEmpty && kept.last?.isEmpty == true { continue }
            kept.append(line.contains("_before_partitions") ? line.replacing(migrationDay, with: "'<migrated>'") : line)
        }
        return kept.joined(separator: "\n").trimmingCharacters(in: .whitespacesAndNewlines) + "\n"
    }
}

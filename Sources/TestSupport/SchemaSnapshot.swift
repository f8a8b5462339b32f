import EmbeddedPostgres

/// The whole schema of a database, functions' bodies included, as `pg_dump --schema-only` prints
/// it without its session settings and comments: what two databases are compared by. The day a
/// database was migrated, which ends the partitions of older rows of the tables split by time in
/// migration 0023, is left out.
public enum SchemaSnapshot {
    /// The snapshot of the database at `connectionString`.
    public static func take(of connectionString: String) throws -> String {
        let day = /'\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\+00'/
        return DumpEntry.parse(try EmbeddedPostgres.dumpSchema(connectionString: connectionString)).map { entry in
            entry.name.hasSuffix("_before_partitions") && !entry.name.hasPrefix("events")
                ? entry.text.replacing(day, with: "'<migrated>'") : entry.text
        }.joined(separator: "\n\n")
    }
}

import Postgres

/// The SQL of the migration runner.
enum MigrationQueries {
    /// Held for the whole run so concurrent `liveline migrate` processes take turns.
    /// The key is arbitrary but fixed: `hashtext('liveline.migrations')`.
    static func withMigrationLock<T>(_ connection: Connection, _ body: () throws -> T) throws -> T {
        try connection.execute("SELECT pg_advisory_lock(hashtext('liveline.migrations'))")
        defer { _ = try? connection.execute("SELECT pg_advisory_unlock(hashtext('liveline.migrations'))") }
        return try body()
    }

    static func createTable(_ connection: Connection) throws {
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS liveline_migrations (
                version integer PRIMARY KEY,
                name text NOT NULL,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """
        )
    }

    static func tableExists(_ connection: Connection) throws -> Bool {
        try connection.query("SELECT to_regclass('liveline_migrations') IS NOT NULL").single?.decode(0) ?? false
    }

    static func applied(_ connection: Connection) throws -> [AppliedMigration] {
        try connection.query("SELECT version, name, checksum FROM liveline_migrations ORDER BY version").map { row in
            AppliedMigration(version: try row.decode(0), name: try row.decode(1), checksum: try row.decode(2))
        }
    }

    static func record(_ migration: Migration, _ connection: Connection) throws {
        try connection.execute(
            """
            INSERT INTO liveline_migrations (version, name, checksum)
            VALUES (\(Int32(migration.version)), \(migration.name), \(migration.checksum))
            """
        )
    }
}

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

    static func createTables(_ connection: Connection) throws {
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
        try connection.execute(
            """
            CREATE TABLE IF NOT EXISTS liveline_functions (
                name text PRIMARY KEY,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """
        )
    }

    static func tableExists(_ connection: Connection) throws -> Bool {
        try exists("liveline_migrations", connection)
    }

    static func applied(_ connection: Connection) throws -> [AppliedMigration] {
        try connection.query("SELECT version, name, checksum FROM liveline_migrations ORDER BY version").map { row in
            AppliedMigration(
                version: try row.decode("version"),
                name: try row.decode("name"),
                checksum: try row.decode("checksum")
            )
        }
    }

    /// The checksum of each function definition applied, by name; none before the first.
    static func appliedFunctions(_ connection: Connection) throws -> [String: String] {
        guard try exists("liveline_functions", connection) else { return [:] }
        let rows = try connection.query("SELECT name, checksum FROM liveline_functions")
        return Dictionary(uniqueKeysWithValues: try rows.map { (try $0.decode("name"), try $0.decode("checksum")) })
    }

    /// Records that `applied` were applied, and forgets definitions no longer among `current`.
    static func recordFunctions(
        _ applied: [FunctionDefinition],
        current: [FunctionDefinition],
        _ connection: Connection
    ) throws {
        try connection.execute(
            """
            INSERT INTO liveline_functions (name, checksum)
            SELECT * FROM unnest(\(PostgresArray(applied.map(\.name))), \(PostgresArray(applied.map(\.checksum))))
            ON CONFLICT (name) DO UPDATE SET checksum = excluded.checksum, applied_at = now()
            """
        )
        try connection.execute(
            "DELETE FROM liveline_functions WHERE name <> ALL (\(PostgresArray(current.map(\.name))))"
        )
    }

    /// Until the transaction ends, function bodies are not checked against the schema.
    static func skipFunctionBodyChecks(_ connection: Connection) throws {
        try connection.execute("SET LOCAL check_function_bodies = off")
    }

    static func record(_ migration: Migration, _ connection: Connection) throws {
        try connection.execute(
            """
            INSERT INTO liveline_migrations (version, name, checksum)
            VALUES (\(Int32(migration.version)), \(migration.name), \(migration.checksum))
            """
        )
    }

    private static func exists(_ table: String, _ connection: Connection) throws -> Bool {
        try connection.query("SELECT to_regclass(\(table)) IS NOT NULL AS found").single?.decode("found") ?? false
    }
}

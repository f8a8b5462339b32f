import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

@Suite("Stored functions: one current definition each, applied whenever it changes")
struct FunctionDefinitionTests {
    let database: String
    let migrations: [Migration]
    let functions: [FunctionDefinition]

    init() async throws {
        database = try await TestDatabase.makeEmpty()
        migrations = try Migration.load(from: TestDatabase.migrationsDirectory)
        functions = try FunctionDefinition.load(from: TestDatabase.functionsDirectory)
    }

    private func recorded(_ pool: ConnectionPool) async throws -> [String: String] {
        try await pool.withConnection { connection in
            Dictionary(
                uniqueKeysWithValues: try connection.query("SELECT name, checksum FROM liveline_functions").map {
                    (try $0.decode(0) as String, try $0.decode(1) as String)
                }
            )
        }
    }

    private func stablePosition(_ pool: ConnectionPool) async throws -> Int64? {
        try await pool.withConnection { try $0.query("SELECT liveline_stable_position()").single?.decode(0) }
    }

    @Test("each file defines the function it is named for, once, with CREATE OR REPLACE, and no other")
    func oneDefinitionPerFile() throws {
        #expect(!functions.isEmpty)
        let definition = try Regex(#"CREATE\s+(OR\s+REPLACE\s+)?FUNCTION\s+([a-z_0-9]+)\s*\("#)
        for function in functions {
            let defined = function.sql.matches(of: definition)
            #expect(defined.map { String($0.output[2].substring ?? "") } == [function.name], "\(function.fileName)")
            #expect(defined.allSatisfy { $0.output[1].substring != nil }, "\(function.fileName) must CREATE OR REPLACE")
        }
    }

    @Test("a migrated database has exactly the functions the folder defines")
    func databaseMatchesFolder() async throws {
        try await TestDatabase.withPool(database) { pool in
            try await Migrator(migrations: migrations, functions: functions, pool: pool).migrate(
                logger: TestDatabase.logger
            )
            let names: [String] = try await pool.withConnection { connection in
                try connection.query(
                    "SELECT proname::text FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1"
                ).map { try $0.decode(0) }
            }
            #expect(names == functions.map(\.name))
            #expect(
                try await recorded(pool) == Dictionary(uniqueKeysWithValues: functions.map { ($0.name, $0.checksum) })
            )
        }
    }

    @Test("a database migrated before the folder existed gets the definitions, once; then migrate does nothing")
    func upgradeFromNumberedMigrationsOnly() async throws {
        try await TestDatabase.withPool(database) { pool in
            // As the migrator before `migrations/functions/` left a database: no record of them.
            try await Migrator(migrations: migrations, functions: [], pool: pool).migrate(logger: TestDatabase.logger)
            try await pool.withConnection { try $0.execute("DROP TABLE liveline_functions") }

            let migrator = Migrator(migrations: migrations, functions: functions, pool: pool)
            let status = try await migrator.status()
            #expect(status.pending.isEmpty)
            #expect(status.changedFunctions == functions)
            #expect(try await migrator.migrate(logger: TestDatabase.logger) == .init(functions: functions))
            #expect(try await migrator.status().isCurrent)
            #expect(try await migrator.migrate(logger: TestDatabase.logger).isEmpty)
        }
    }

    @Test("a changed definition is pending until migrate applies it, alone; then it is in force")
    func changedDefinition() async throws {
        try await TestDatabase.withPool(database) { pool in
            try await Migrator(migrations: migrations, functions: functions, pool: pool).migrate(
                logger: TestDatabase.logger
            )
            let index = try #require(functions.firstIndex { $0.name == "liveline_stable_position" })
            var changed = functions
            changed[index] = FunctionDefinition(
                name: "liveline_stable_position",
                sql: "CREATE OR REPLACE FUNCTION liveline_stable_position() RETURNS bigint LANGUAGE sql STABLE AS $$\n"
                    + "    SELECT 42::bigint\n$$;\n"
            )
            let migrator = Migrator(migrations: migrations, functions: changed, pool: pool)
            let status = try await migrator.status()
            #expect(!status.isCurrent)
            #expect(status.pendingFiles == ["functions/liveline_stable_position.sql"])
            #expect(try await stablePosition(pool) != 42)

            #expect(try await migrator.migrate(logger: TestDatabase.logger) == .init(functions: [changed[index]]))
            #expect(try await stablePosition(pool) == 42)
            #expect(try await recorded(pool)["liveline_stable_position"] == changed[index].checksum)

            // Back to the repository's text.
            let restored = Migrator(migrations: migrations, functions: functions, pool: pool)
            #expect(try await restored.migrate(logger: TestDatabase.logger) == .init(functions: [functions[index]]))
            #expect(try await stablePosition(pool) != 42)
        }
    }

    @Test("a definition that fails leaves every definition as it was, and none recorded as applied")
    func failingDefinitionRollsBack() async throws {
        let broken = FunctionDefinition(
            name: "liveline_zz_broken",
            sql: "CREATE OR REPLACE FUNCTION liveline_zz_broken() RETURNS integer LANGUAGE sql AS $$ SELECT nope $$;"
        )
        try await TestDatabase.withPool(database) { pool in
            let migrator = Migrator(migrations: migrations, functions: functions + [broken], pool: pool)
            await #expect(throws: EventStoreError.self) { try await migrator.migrate(logger: TestDatabase.logger) }
            #expect(try await recorded(pool).isEmpty)
            // The numbered migrations were each committed; the definitions are still due.
            let status = try await Migrator(migrations: migrations, functions: functions, pool: pool).status()
            #expect(status.pending.isEmpty)
            #expect(status.changedFunctions == functions)
        }
    }

    @Test("a retired definition's record is forgotten when the definitions are applied next")
    func retiredDefinition() async throws {
        let extra = FunctionDefinition(
            name: "liveline_zz_extra",
            sql: "CREATE OR REPLACE FUNCTION liveline_zz_extra() RETURNS integer LANGUAGE sql AS $$ SELECT 1 $$;"
        )
        let retiring = Migration(
            version: migrations.count + 1,
            name: "retire_extra",
            sql: "DROP FUNCTION liveline_zz_extra();"
        )
        try await TestDatabase.withPool(database) { pool in
            try await Migrator(migrations: migrations, functions: functions + [extra], pool: pool).migrate(
                logger: TestDatabase.logger
            )
            #expect(try await recorded(pool)["liveline_zz_extra"] != nil)
            let migrator = Migrator(migrations: migrations + [retiring], functions: functions, pool: pool)
            #expect(try await migrator.migrate(logger: TestDatabase.logger).migrations == [retiring])
            #expect(try await recorded(pool)["liveline_zz_extra"] == nil)
            #expect(try await migrator.status().isCurrent)
        }
    }

    @Test("function files are named after their function; a missing folder has none")
    func fileNames() throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "liveline-functions-\(UUID().uuidString)")
        #expect(try FunctionDefinition.load(from: folder).isEmpty)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data("SELECT 1;".utf8).write(to: folder.appending(path: "liveline_b.sql"))
        try Data("SELECT 1;".utf8).write(to: folder.appending(path: "liveline_a.sql"))
        try Data("notes".utf8).write(to: folder.appending(path: "README.md"))
        #expect(
            try FunctionDefinition.load(from: folder).map(\.fileName) == [
                "functions/liveline_a.sql", "functions/liveline_b.sql",
            ]
        )
        try Data("SELECT 1;".utf8).write(to: folder.appending(path: "Bad-Name.sql"))
        #expect(throws: MigrationError.badFunctionFileName("functions/Bad-Name.sql")) {
            try FunctionDefinition.load(from: folder)
        }
    }
}

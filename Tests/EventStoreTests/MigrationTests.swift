import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

@Suite("Migrations")
struct MigrationTests {
    let database: String
    let migrations: [Migration]
    let functions: [FunctionDefinition]

    init() async throws {
        database = try await TestDatabase.makeEmpty()
        migrations = try Migration.load(from: TestDatabase.migrationsDirectory)
        functions = try FunctionDefinition.load(from: TestDatabase.functionsDirectory)
    }

    private func migrator(_ pool: ConnectionPool, _ migrations: [Migration]? = nil) -> Migrator {
        Migrator(migrations: migrations ?? self.migrations, functions: functions, pool: pool)
    }

    private func appliedRows(_ pool: ConnectionPool) async throws -> [Int] {
        try await pool.withConnection { connection in
            try connection.query("SELECT version FROM liveline_migrations ORDER BY version").map { try $0.decode(0) }
        }
    }

    @Test("the repository's migrations load in order, numbered from 1")
    func repositoryMigrations() {
        #expect(!migrations.isEmpty)
        #expect(migrations.map(\.version) == Array(1...migrations.count))
        #expect(migrations.allSatisfy { $0.checksum.count == 64 })
    }

    @Test("a fresh database gets every migration, recorded; a second run is a no-op")
    func freshThenNoOp() async throws {
        try await TestDatabase.withPool(database) { pool in
            let migrator = migrator(pool)
            #expect(try await migrator.status().pending == migrations)
            #expect(try await migrator.status().changedFunctions == functions)
            let applied = try await migrator.migrate(logger: TestDatabase.logger)
            #expect(applied == Migrator.Applied(migrations: migrations, functions: functions))
            #expect(try await migrator.status().isCurrent)
            #expect(try await appliedRows(pool) == migrations.map(\.version))

            #expect(try await migrator.migrate(logger: TestDatabase.logger).isEmpty)
            #expect(try await appliedRows(pool) == migrations.map(\.version))
        }
    }

    @Test("pending migrations are applied in order after earlier ones")
    func appliesOnlyPending() async throws {
        let extra = Migration(version: migrations.count + 1, name: "extra", sql: "CREATE TABLE extra (id integer);")
        try await TestDatabase.withPool(database) { pool in
            try await migrator(pool).migrate(logger: TestDatabase.logger)
            let applied = try await migrator(pool, migrations + [extra]).migrate(logger: TestDatabase.logger)
            // After a migration every definition is applied again: it may have dropped one.
            #expect(applied == Migrator.Applied(migrations: [extra], functions: functions))
        }
    }

    @Test("several processes migrating at once apply each migration exactly once")
    func concurrentRuns() async throws {
        let appliedCounts = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    // Separate pools stand for separate processes.
                    try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
                        try await migrator(pool).migrate(logger: TestDatabase.logger).migrations.count
                    }
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(appliedCounts.sorted() == [0, 0, 0, migrations.count])
        let versions = try await TestDatabase.withPool(database) { try await appliedRows($0) }
        #expect(versions == migrations.map(\.version))
    }

    @Test("an applied migration whose file was edited stops migrate and status")
    func editedFileRefused() async throws {
        try await TestDatabase.withPool(database) { pool in
            try await migrator(pool).migrate(logger: TestDatabase.logger)
            var edited = migrations
            edited[0] = Migration(version: 1, name: migrations[0].name, sql: migrations[0].sql + "\n-- edited\n")
            let migrator = migrator(pool, edited)
            let error = await #expect(throws: MigrationError.self) {
                try await migrator.migrate(logger: TestDatabase.logger)
            }
            guard case .edited(let version, _, _, _) = error else {
                Issue.record("expected an edited-file error, got \(String(describing: error))")
                return
            }
            #expect(version == 1)
            #expect(error?.description.contains("new migration") == true)
            await #expect(throws: MigrationError.self) { try await migrator.status() }
        }
    }

    @Test("a database migrated by a newer version is refused")
    func unknownAppliedMigration() async throws {
        let newer = Migration(version: migrations.count + 1, name: "from_the_future", sql: "SELECT 1;")
        try await TestDatabase.withPool(database) { pool in
            try await migrator(pool, migrations + [newer]).migrate(logger: TestDatabase.logger)
            await #expect(throws: MigrationError.unknownApplied(version: newer.version, name: newer.name)) {
                try await migrator(pool).status()
            }
        }
    }

    @Test("a failing migration leaves no trace and is not recorded")
    func failingMigrationRollsBack() async throws {
        let broken = Migration(
            version: migrations.count + 1,
            name: "broken",
            sql: "CREATE TABLE half_done (id integer);\nSELECT no_such_function();"
        )
        try await TestDatabase.withPool(database) { pool in
            let migrator = migrator(pool, migrations + [broken])
            await #expect(throws: EventStoreError.self) { try await migrator.migrate(logger: TestDatabase.logger) }
            #expect(try await appliedRows(pool) == migrations.map(\.version))
            let exists: Bool? = try await pool.withConnection {
                try $0.query("SELECT to_regclass('half_done') IS NOT NULL").single?.decode(0)
            }
            #expect(exists == false)
        }
    }

    @Test("migration files must be named NNNN_name.sql with distinct numbers")
    func fileNames() throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "liveline-migrations-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func write(_ name: String) throws {
            try Data("SELECT 1;".utf8).write(to: folder.appending(path: name))
        }

        try write("0002_second.sql")
        try write("0001_first.sql")
        try write("README.md")
        #expect(try Migration.load(from: folder).map(\.fileName) == ["0001_first.sql", "0002_second.sql"])

        try write("0002_again.sql")
        #expect(throws: MigrationError.duplicateVersion(2)) { try Migration.load(from: folder) }
        try FileManager.default.removeItem(at: folder.appending(path: "0002_again.sql"))

        try write("first.sql")
        #expect(throws: MigrationError.badFileName("first.sql")) { try Migration.load(from: folder) }

        #expect(throws: MigrationError.self) { try Migration.load(from: folder.appending(path: "missing")) }
    }
}

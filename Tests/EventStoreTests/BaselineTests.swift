import EmbeddedPostgres
import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

/// The two ways to a current schema: a database in use through the numbered migrations, a new one
/// from the baseline. Both must reach the same schema, and each must dump to the committed
/// baseline. With `LIVELINE_UPDATE_BASELINE=1` (scripts/update-baseline.sh) the first way writes it,
/// before the other tests read it.
@Suite("The baseline new databases are made from", .serialized)
struct BaselineTests {
    let migrations = try! Migration.load(from: TestDatabase.migrationsDirectory)
    let functions = try! FunctionDefinition.load(from: TestDatabase.functionsDirectory)

    @Test("the numbered migrations and the baseline make the same schema and rows, and the baseline's is recorded")
    func bothWays() async throws {
        // Migrated only: the log's partitions, named by the dates they cover, are the server's data.
        let numbered = try await TestDatabase.makeEmpty()
        try await TestDatabase.withPool(numbered) { pool in
            let applied = try await Migrator(migrations: migrations, functions: functions, pool: pool).migrate(
                logger: TestDatabase.logger
            )
            #expect(applied.baseline == nil && applied.migrations == migrations)
        }
        let dumped = try await BaselineDump.make(of: numbered, version: try #require(migrations.last).version)
        if ProcessInfo.processInfo.environment["LIVELINE_UPDATE_BASELINE"] == "1" {
            try Self.write(dumped)
        }
        let committed = try #require(try Baseline.load(from: BaselineDump.directory))
        #expect(committed == dumped, "the migrations build another schema: run scripts/update-baseline.sh")

        let new = try await TestDatabase.makeEmpty()
        try await TestDatabase.withPool(new) { pool in
            let migrator = try Migrator.loading(from: TestDatabase.migrationsDirectory, pool: pool)
            #expect(try await migrator.status().pendingFiles == committed.fileNames)
            let applied = try await migrator.migrate(logger: TestDatabase.logger)
            #expect(applied == Migrator.Applied(baseline: committed, functions: functions))
            #expect(try await migrator.status().isCurrent)
            #expect(try await migrator.status().applied == migrations.map(\.version))
            #expect(try await migrator.migrate(logger: TestDatabase.logger).isEmpty)
        }
        // Functions included; and the same rows, since it dumps to the baseline again.
        #expect(try SchemaSnapshot.take(of: new) == (try SchemaSnapshot.take(of: numbered)))
        #expect(try await BaselineDump.make(of: new, version: committed.version) == committed)
    }

    @Test("several processes making one new database at once: one makes it from the baseline, the others find it made")
    func concurrentCreation() async throws {
        let database = try await TestDatabase.makeEmpty()
        let made = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    // Separate pools stand for separate processes.
                    try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
                        let migrator = try Migrator.loading(from: TestDatabase.migrationsDirectory, pool: pool)
                        return try await migrator.migrate(logger: TestDatabase.logger).baseline != nil
                    }
                }
            }
            return try await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(made.sorted { !$0 && $1 } == [false, false, false, true])
        try await TestDatabase.withPool(database) { pool in
            let status = try await Migrator.loading(from: TestDatabase.migrationsDirectory, pool: pool).status()
            #expect(status.isCurrent && status.applied == migrations.map(\.version))
        }
    }

    @Test(
        "on a new cluster, a database made from the baseline while another makes the roles as 0001 does waits for them, and neither deadlocks"
    )
    func rolesInOneOrder() async throws {
        let roles = migrations[0].sql.matches(of: /CREATE ROLE (liveline_[a-z_]+)/).map { String($0.output.1) }
        try #require(roles.count == 2)
        try await TestDatabase.withPrivateCluster { cluster in
            let admin = cluster.url(database: cluster.defaultDatabase)
            try await TestDatabase.withPool(admin, maximumConnections: 1) { pool in
                try await pool.withConnection { try $0.execute("CREATE DATABASE made_from_the_baseline") }
            }
            // The numbered migrations on another database: 0001's first role made and held, then,
            // once the baseline's migration waits for a lock, its second.
            let (madeTheFirst, first) = AsyncStream<Void>.makeStream()
            let numbered = Task {
                try await TestDatabase.withPool(admin, maximumConnections: 1) { pool in
                    try await pool.withTransaction { connection in
                        try connection.execute("CREATE ROLE \(identifier: roles[0]) NOLOGIN")
                        first.yield()
                        let giveUp = ContinuousClock.now + .seconds(60)
                        while try connection.query("SELECT EXISTS (SELECT FROM pg_locks WHERE NOT granted)").single!
                            .decode(0) == false
                        {
                            try #require(ContinuousClock.now < giveUp, "the baseline's migration never waited")
                            Thread.sleep(forTimeInterval: 0.01)
                        }
                        try connection.execute("CREATE ROLE \(identifier: roles[1]) NOLOGIN")
                    }
                }
            }
            for await _ in madeTheFirst { break }
            let new = try ConnectionString.replacingDatabase(in: admin, with: "made_from_the_baseline")
            let applied = try await TestDatabase.withPool(new, maximumConnections: 1) { pool in
                try await Migrator.loading(from: TestDatabase.migrationsDirectory, pool: pool).migrate(
                    logger: TestDatabase.logger
                )
            }
            #expect(applied.baseline != nil)
            try await numbered.value
        }
    }

    @Test("a database with migrations applied upgrades through the numbered files, not the baseline")
    func upgradeSkipsTheBaseline() async throws {
        let database = try await TestDatabase.makeEmpty()
        let last = try #require(migrations.last)
        try await TestDatabase.withPool(database) { pool in
            // The function texts of the older migrations: today's need the last one.
            try await Migrator(migrations: migrations.dropLast(), functions: [], pool: pool).migrate(
                logger: TestDatabase.logger
            )
            let applied = try await Migrator.loading(from: TestDatabase.migrationsDirectory, pool: pool).migrate(
                logger: TestDatabase.logger
            )
            #expect(applied == Migrator.Applied(migrations: [last], functions: functions))
        }
        #expect(
            try await BaselineDump.make(of: database, version: last.version)
                == (try Baseline.load(from: BaselineDump.directory))
        )
    }

    @Test("a baseline ahead of the numbered migrations, or malformed, is refused")
    func refusedBaselines() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "liveline-baseline-\(UUID().uuidString)")
        let baselineFolder = folder.appending(path: "baseline")
        try FileManager.default.createDirectory(at: baselineFolder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func write(_ name: String, in directory: URL) throws {
            try Data("SELECT 1;".utf8).write(to: directory.appending(path: name))
        }
        try write("0001_first.sql", in: folder)
        try write("0002_schema.sql", in: baselineFolder)
        try write("0002_triggers.sql", in: baselineFolder)
        try await TestDatabase.withPool(try await TestDatabase.makeEmpty()) { pool in
            #expect(throws: MigrationError.baselineAheadOfMigrations(version: 2)) {
                try Migrator.loading(from: folder, pool: pool)
            }
            try write("0002_second.sql", in: folder)
            #expect(try Migrator.loading(from: folder, pool: pool).baseline?.version == 2)
            try write("0003_schema.sql", in: baselineFolder)
            #expect(
                throws: MigrationError.badBaseline(["0002_schema.sql", "0002_triggers.sql", "0003_schema.sql"])
            ) {
                try Migrator.loading(from: folder, pool: pool)
            }
        }
    }

    private static func write(_ baseline: Baseline) throws {
        try? FileManager.default.removeItem(at: BaselineDump.directory)
        try FileManager.default.createDirectory(at: BaselineDump.directory, withIntermediateDirectories: true)
        for (name, text) in zip(baseline.fileNames, [baseline.schema, baseline.triggers]) {
            try Data(text.utf8).write(to: TestDatabase.migrationsDirectory.appending(path: name))
        }
    }
}

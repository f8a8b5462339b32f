public import EmbeddedPostgres
import EventStore
public import Foundation
public import Logging
import NIOPosix
public import Postgres

/// Databases for tests: each suite asks for a fresh one, so suites can run in parallel.
///
/// With `DATABASE_URL` unset (the default), a throwaway cluster is started once per test process
/// in a temporary folder (fsync off) and stopped when the process exits. With `DATABASE_URL`
/// set, the databases are created on that server instead.
public enum TestDatabase {
    /// A logger for tests: quiet unless `LIVELINE_TEST_LOG_LEVEL` says otherwise.
    public static let logger: Logger = {
        var logger = Logger(label: "liveline.tests")
        logger.logLevel =
            ProcessInfo.processInfo.environment["LIVELINE_TEST_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) }
            ?? .critical
        return logger
    }()

    /// The repository's `migrations/` folder.
    public static let migrationsDirectory = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "migrations")

    /// The current definitions of the stored functions: `migrations/functions/`.
    public static let functionsDirectory = migrationsDirectory.appending(path: "functions")

    /// Creates an empty database and returns its connection string.
    public static func makeEmpty() async throws -> String {
        try await TestServer.shared.createDatabase(template: nil)
    }

    /// Creates a database with every migration applied and returns its connection string.
    public static func makeMigrated() async throws -> String {
        try await TestServer.shared.createDatabase(template: try await TestServer.shared.migratedTemplate())
    }

    /// Applies every migration to the database at `connectionString`, and creates the log's
    /// partitions around now, as the server does when it starts.
    public static func migrate(_ connectionString: String) async throws {
        try await withPool(connectionString, maximumConnections: 1) { pool in
            try await Migrator.loading(from: migrationsDirectory, pool: pool).migrate(logger: logger)
            try await pool.withConnection {
                try $0.execute(
                    "SELECT liveline_create_partitions(parent) FROM (SELECT DISTINCT parent FROM log_partitions) p"
                )
            }
        }
    }

    /// A pool on `connectionString`, shut down after `body`.
    @discardableResult
    public static func withPool<T>(
        _ connectionString: String,
        maximumConnections: Int = 4,
        checkoutTimeout: Duration = .seconds(10),
        _ body: (ConnectionPool) async throws -> T
    ) async throws -> T {
        let pool = try ConnectionPool(
            configuration: .init(
                connectionString: connectionString,
                maximumConnections: maximumConnections,
                checkoutTimeout: checkoutTimeout
            ),
            logger: logger
        )
        return try await pool.using(body)
    }

    /// A cluster of the test's own, for tests that stop or restart the server; stopped and
    /// deleted after `body`. `settings` override the server settings of test clusters.
    public static func withPrivateCluster<T>(
        settings: [String: String] = [:],
        _ body: (EmbeddedPostgres) async throws -> T
    ) async throws -> T {
        let folder = try TemporaryFolder.make()
        let cluster = try await startCluster(in: folder, settings: settings)
        do {
            let value = try await body(cluster)
            try? await offCooperativePool { try cluster.stop() }
            folder.remove()
            return value
        } catch {
            try? await offCooperativePool { try cluster.stop() }
            folder.remove()
            throw error
        }
    }

    static func startCluster(in folder: URL, settings: [String: String] = [:]) async throws -> EmbeddedPostgres {
        var configuration = EmbeddedPostgres.Configuration(
            dataDirectory: folder.appending(path: "data"),
            socketDirectory: folder.appending(path: "run")
        )
        configuration.settings.merge(
            ["fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "500"]
        ) { $1 }
        configuration.settings.merge(settings) { $1 }
        let settings = configuration
        return try await offCooperativePool { try EmbeddedPostgres.start(settings, logger: logger) }
    }

    /// Runs blocking work (process spawning, waiting) on NIO's blocking pool.
    public static func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(body)
    }
}

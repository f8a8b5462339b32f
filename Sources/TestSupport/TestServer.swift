import EmbeddedPostgres
import EventStore
import Foundation
import Postgres

/// The server the test databases live on, shared by every suite of the test process.
actor TestServer {
    static let shared = TestServer()

    // Tasks, not values: suites ask concurrently, and the actor is reentrant across `await`.
    private var adminURL: Task<String, any Error>?
    private var template: Task<String, any Error>?

    /// The connection string of the server's maintenance database, starting a cluster on first use.
    func administrationURL() async throws -> String {
        if adminURL == nil {
            adminURL = Task { try await Self.startServer() }
        }
        return try await adminURL!.value
    }

    /// A database migrated once per process, copied by `CREATE DATABASE … TEMPLATE` for each suite.
    func migratedTemplate() async throws -> String {
        if template == nil {
            template = Task { try await makeTemplate() }
        }
        return try await template!.value
    }

    private static func startServer() async throws -> String {
        if let external = ProcessInfo.processInfo.environment["DATABASE_URL"], !external.isEmpty {
            return external
        }
        TemporaryFolder.removeAbandoned()
        let folder = try TemporaryFolder.make()
        let cluster = try await TestDatabase.startCluster(in: folder)
        ClusterReaper.stopAtExit(cluster, folder: folder)
        return cluster.url(database: cluster.defaultDatabase)
    }

    private func makeTemplate() async throws -> String {
        let name = "liveline_template_\(UUID().uuidString.prefix(8).lowercased())"
        let url = try await createDatabase(named: name, template: nil)
        try await TestDatabase.migrate(url)
        return name
    }

    func createDatabase(template: String?) async throws -> String {
        try await createDatabase(
            named: "liveline_test_\(UUID().uuidString.prefix(13).lowercased().replacingOccurrences(of: "-", with: ""))",
            template: template
        )
    }

    private func createDatabase(named name: String, template: String?) async throws -> String {
        let adminURL = try await administrationURL()
        try await TestDatabase.withPool(adminURL, maximumConnections: 1) { pool in
            try await pool.withConnection { connection in
                if let template {
                    try connection.execute("CREATE DATABASE \(identifier: name) TEMPLATE \(identifier: template)")
                } else {
                    try connection.execute("CREATE DATABASE \(identifier: name)")
                }
            }
        }
        return try ConnectionString.replacingDatabase(in: adminURL, with: name)
    }
}

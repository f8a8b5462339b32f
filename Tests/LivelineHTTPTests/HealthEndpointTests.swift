import EventStore
import Foundation
import Hummingbird
import HummingbirdTesting
import LivelineHTTP
import Postgres
import TestSupport
import Testing

@Suite("Health endpoints over real HTTP")
struct HealthEndpointTests {
    /// Runs the application on a loopback port against `database`, with the repository's migrations.
    private func withLiveApplication(
        database: String,
        migrations: [Migration]? = nil,
        _ body: @Sendable (any TestClientProtocol) async throws -> Void
    ) async throws {
        let pool = try ConnectionPool(
            configuration: .init(connectionString: database, maximumConnections: 2, checkoutTimeout: .seconds(2)),
            logger: TestDatabase.logger
        )
        let app = buildApplication(
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            migrator: Migrator(
                migrations: try migrations ?? Migration.load(from: TestDatabase.migrationsDirectory),
                pool: pool
            ),
            services: [pool],
            logger: TestDatabase.logger
        )
        try await app.test(.live, body)
    }

    /// The RFC 9457 body every error response carries.
    struct ProblemBody: Decodable {
        let type: String
        let title: String
        let status: Int
        let detail: String
        let code: String
    }

    private func problem(_ response: TestResponse) throws -> ProblemBody {
        #expect(response.headers[.contentType] == "application/problem+json")
        return try JSONDecoder().decode(ProblemBody.self, from: Data(String(buffer: response.body).utf8))
    }

    @Test("/healthz answers 200 while the process runs, whatever the database")
    func healthz() async throws {
        try await withLiveApplication(database: "host=/nonexistent-liveline-socket dbname=none") { client in
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == #"{"status":"ok"}"#)
            }
        }
    }

    @Test("/readyz answers 200 on a reachable, migrated database")
    func ready() async throws {
        let database = try await TestDatabase.makeMigrated()
        try await withLiveApplication(database: database) { client in
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .ok)
                #expect(String(buffer: response.body) == #"{"status":"ready"}"#)
            }
        }
    }

    @Test("/readyz answers 503 migrations_pending, naming the files, before migrate")
    func pendingMigrations() async throws {
        let database = try await TestDatabase.makeEmpty()
        try await withLiveApplication(database: database) { client in
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let body = try problem(response)
                #expect(body.code == "migrations_pending")
                #expect(body.status == 503)
                #expect(body.detail.contains("0001_initial_schema.sql"))
            }
        }
    }

    @Test("/readyz answers 503 migrations_mismatch when an applied migration was edited")
    func editedMigration() async throws {
        let database = try await TestDatabase.makeMigrated()
        var migrations = try Migration.load(from: TestDatabase.migrationsDirectory)
        migrations[0] = Migration(version: 1, name: migrations[0].name, sql: "-- edited")
        try await withLiveApplication(database: database, migrations: migrations) { client in
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let body = try problem(response)
                #expect(body.code == "migrations_mismatch")
            }
        }
    }

    @Test("/readyz answers 503 database_unavailable when PostgreSQL cannot be reached, without leaking details")
    func databaseDown() async throws {
        try await withLiveApplication(database: "host=/nonexistent-liveline-socket dbname=none") { client in
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let body = try problem(response)
                #expect(body.code == "database_unavailable")
                #expect(!body.detail.contains("nonexistent"))
            }
        }
    }
}

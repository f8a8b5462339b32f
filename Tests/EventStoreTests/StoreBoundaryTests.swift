import ActivityLifecycle
import EventStore
import Postgres
import TestSupport
import Testing

@Suite("Database failures leave the store as the store's errors, never as PostgresError")
struct StoreBoundaryTests {
    @Test("an unreachable database is databaseUnavailable, with the driver's message for operators")
    func unreachable() async throws {
        let url = "host=/nonexistent-liveline-socket dbname=none"
        try await TestDatabase.withPool(url, maximumConnections: 1) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            let error = await #expect(throws: EventStoreError.self) { try await store.apps() }
            guard case .databaseUnavailable(let failure) = error else {
                Issue.record("\(String(describing: error)) is not databaseUnavailable")
                return
            }
            #expect(failure.summary == "database unavailable")
            #expect(!failure.message.isEmpty)
            #expect(error?.description == "database unavailable: \(failure.message)")
        }
    }

    @Test("a taken app id is appExists; a key for an unknown app is unknownApp")
    func expectedConstraints() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            await #expect(throws: EventStoreError.appExists(fixture.app)) {
                try await store.createApp(fixture.app, AppSettings(bundleID: "again"), by: .commandLine)
            }
            let stranger = AppID(rawValue: "nobody")!
            await #expect(throws: EventStoreError.unknownApp(stranger)) {
                try await store.issueKey(for: stranger, by: .commandLine)
            }
        }
    }

    @Test("a statement the database refuses is databaseFailure, with its details for logs")
    func refused() async throws {
        let database = try await TestDatabase.makeEmpty()
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            // An empty database: the store's tables do not exist.
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            let error = await #expect(throws: EventStoreError.self) { try await store.apps() }
            guard case .databaseFailure(let failure) = error else {
                Issue.record("\(String(describing: error)) is not databaseFailure")
                return
            }
            #expect(failure.summary == "database error (SQLSTATE 42P01)")
            #expect(failure.details.contains("apps"))
        }
    }
}

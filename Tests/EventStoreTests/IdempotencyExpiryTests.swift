import ActivityLifecycle
import CanonicalJSON
import MetricsTestKit
import Postgres
import TestSupport
import Testing

@testable import EventStore

@Suite("Idempotency keys expire after their window; the log's maintenance removes them and says when it cannot")
struct IdempotencyExpiryTests {
    let fixture: StoreFixture

    init() async throws {
        fixture = try await StoreFixture.make()
    }

    private func key(_ name: String, digest: UInt8 = 1) -> IdempotencyKey {
        IdempotencyKey(key: name, requestDigest: [digest])
    }

    /// Makes the keys named `names` look `age` old, as the database's clock stamped them.
    private func age(_ names: [String], by age: Duration) async throws {
        try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                try connection.execute(
                    """
                    UPDATE idempotency_keys SET created_at = now() - make_interval(secs => \(Double(age.microseconds) / 1e6))
                    WHERE idempotency_key = ANY (\(PostgresArray(names)))
                    """
                )
            }
        }
    }

    private func keptKeys() async throws -> [String] {
        try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                try connection.query("SELECT idempotency_key FROM idempotency_keys ORDER BY 1").map {
                    try $0.decode("idempotency_key")
                }
            }
        }
    }

    @Test("keys older than the window are removed, in batches, oldest first; younger ones are kept")
    func olderKeysAreRemoved() async throws {
        let names = (0..<7).map { "key-\($0)" }
        try await fixture.withStore { store in
            for (index, name) in names.enumerated() {
                try await store.execute(
                    requestCommand(),
                    on: fixture.stream("a\(index)"),
                    at: fixture.now,
                    idempotency: key(name)
                )
            }
        }
        try await age(Array(names.prefix(5)), by: .seconds(25 * 3600))
        try await age(["key-5"], by: .seconds(23 * 3600))

        let removed = try await fixture.withStore { store in
            try await store.expireIdempotencyKeys(olderThan: .seconds(24 * 3600), batchSize: 2)
        }
        #expect(removed == 5)
        #expect(try await keptKeys() == ["key-5", "key-6"])
        #expect(try await fixture.withStore { try await $0.expireIdempotencyKeys(olderThan: .seconds(24 * 3600)) } == 0)
    }

    @Test("within the window a retry is answered from the log; after it, the same key is a new command")
    func retryAfterTheWindowIsANewCommand() async throws {
        let stream = fixture.stream("retried")
        try await fixture.withStore { store in
            try await store.execute(requestCommand(), on: stream, at: fixture.now)
            let first = try await store.execute(
                updateCommand(2),
                on: stream,
                at: fixture.now + .seconds(1),
                idempotency: key("update")
            )
            #expect(first.accepted?.activity.version == 2)
            let retry = try await store.execute(
                updateCommand(2),
                on: stream,
                at: fixture.now + .seconds(2),
                idempotency: key("update")
            )
            #expect(retry.isReplay)
            #expect(retry.accepted?.activity.version == 2)
        }
        try await age(["update"], by: .seconds(25 * 3600))
        try await fixture.withStore { store in
            #expect(try await store.expireIdempotencyKeys(olderThan: .seconds(24 * 3600)) == 1)
            let late = try await store.execute(
                updateCommand(2),
                on: stream,
                at: fixture.now + .seconds(3),
                idempotency: key("update", digest: 2)
            )
            #expect(!late.isReplay)
            #expect(late.accepted?.activity.version == 3)
        }
        #expect(try await keptKeys() == ["update"])
    }

    @Test(
        "a failed retention run is counted and degrades readiness until a run succeeds; each run counts the keys it removed"
    )
    func maintenanceReportsFailures() async throws {
        try await fixture.withStore { store in
            try await store.execute(requestCommand(), on: fixture.stream("a"), at: fixture.now, idempotency: key("old"))
        }
        try await age(["old"], by: .seconds(25 * 3600))
        let metrics = TestMetrics()
        let health = MaintenanceHealth()
        try await fixture.withStore { store in
            let maintenance = LogMaintenance(
                store: store,
                health: health,
                logger: TestDatabase.logger,
                metrics: metrics
            )
            try await TestDatabase.withPool(fixture.database) { pool in
                try await pool.withConnection { try $0.execute("ALTER TABLE idempotency_keys RENAME TO keys_away") }
            }
            await maintenance.applyRetention()
            #expect(health.failure?.contains("idempotency_keys") == true)
            #expect(
                try metrics.expectCounter("liveline_maintenance_failures_total", [("job", "retention")]).totalValue == 1
            )

            try await TestDatabase.withPool(fixture.database) { pool in
                try await pool.withConnection { try $0.execute("ALTER TABLE keys_away RENAME TO idempotency_keys") }
            }
            await maintenance.applyRetention()
            #expect(health.failure == nil)
            #expect(try metrics.expectCounter("liveline_idempotency_keys_expired_total").totalValue == 1)
        }
        #expect(try await keptKeys().isEmpty)
    }
}

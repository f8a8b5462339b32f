import ActivityLifecycle
import CanonicalJSON
import MetricsTestKit
import Postgres
import TestSupport
import Testing

@testable import EventStore

@Suite("The log's maintenance runs its two jobs side by side, and each fails and recovers on its own")
struct LogMaintenanceTests {
    let fixture: StoreFixture

    init() async throws {
        fixture = try await StoreFixture.make()
    }

    private func maintenance(
        _ store: EventStore,
        _ health: MaintenanceHealth,
        _ metrics: TestMetrics,
        interval: Duration = .seconds(60)
    ) -> LogMaintenance {
        LogMaintenance(
            store: store,
            configuration: .init(interval: interval),
            health: health,
            logger: TestDatabase.logger,
            metrics: metrics
        )
    }

    /// How many runs of `job` failed, as the metrics count them.
    private static func failures(of job: String, _ metrics: TestMetrics) throws -> Int64 {
        try metrics.expectCounter("liveline_maintenance_failures_total", [("job", job)]).totalValue
    }

    /// When a run of `job` last succeeded (Unix seconds), as the metrics say; 0 if none has.
    private static func lastSuccess(of job: String, _ metrics: TestMetrics) throws -> Double {
        try metrics.expectGauge("liveline_maintenance_last_success_seconds", [("job", job)]).lastValue ?? 0
    }

    /// The days ahead of now up to which `events` has partitions.
    private static func daysAhead(_ admin: ConnectionPool) async throws -> Double {
        try await admin.withConnection { connection in
            try connection.query(
                """
                SELECT (extract(epoch FROM max(to_time) - now()) / 86400)::float8 AS days
                FROM log_partitions WHERE parent = 'events'
                """
            ).single!.decode("days")
        }
    }

    @Test("the partitions ahead are created while a retention run is held up")
    func partitionsAheadDoNotWaitForRetention() async throws {
        try await TestDatabase.withPool(fixture.database) { admin in
            // The retention job's first statement, the expiry of idempotency keys, waits behind this.
            let (pids, held) = await DatabaseWaits.hold(
                [("keys", { try $0.execute("LOCK TABLE idempotency_keys IN ACCESS EXCLUSIVE MODE") })],
                on: admin
            )
            try await fixture.withStore { store in
                let running = Task {
                    try await maintenance(store, MaintenanceHealth(), TestMetrics(), interval: .milliseconds(50)).run()
                }
                try await DatabaseWaits.waitUntil("the retention job waits for the idempotency keys") {
                    try await DatabaseWaits.lockWaiters(admin) == 1
                }
                // A day each, two ahead: the first run made them; now five are due.
                #expect(try await Self.daysAhead(admin) < 5)
                try await admin.withConnection { try $0.execute("UPDATE log_partitioning SET partitions_ahead = 5") }
                try await DatabaseWaits.waitUntil("the partitions job creates five days ahead") {
                    try await Self.daysAhead(admin) >= 5
                }
                #expect(try await DatabaseWaits.lockWaiters(admin) == 1)
                try await DatabaseWaits.terminate(pids["keys"]!, admin)
                await held.value
                running.cancel()
                try await running.value
            }
        }
    }

    @Test("the retention job finishes an erasure a stopped process left recorded and undone")
    func finishesErasures() async throws {
        try await fixture.withStore { store in
            let stream = fixture.stream("erased")
            _ = try await store.execute(requestCommand(device: "phone-1"), on: stream, at: fixture.now)
            _ = try await store.execute(.end(.init(dismissal: .immediate)), on: stream, at: fixture.now + .seconds(1))
            let erasure = try await store.requestErasure(.activity(stream.activity), in: fixture.app, by: .commandLine)
            #expect(erasure.finishedAt == nil)
            await maintenance(store, MaintenanceHealth(), TestMetrics()).applyRetention()
            #expect(try await store.erasure(erasure.id)?.finishedAt != nil)
            #expect(try await store.activity(stream)?.activity.content.contentState.members["step"] == .string("•••"))
        }
    }

    @Test("each job's failure degrades readiness under its name until that job succeeds, whatever the other does")
    func eachJobReportsOnItsOwn() async throws {
        let metrics = TestMetrics()
        let health = MaintenanceHealth()
        try await TestDatabase.withPool(fixture.database) { admin in
            try await fixture.withStore { store in
                let maintenance = maintenance(store, health, metrics)
                // The expiry of keys fails; the sizes, which the partitions job reads, are still there.
                try await admin.withConnection {
                    try $0.execute("ALTER TABLE idempotency_keys RENAME COLUMN created_at TO created_away")
                }
                await maintenance.applyRetention()
                await maintenance.keepPartitions()
                #expect(health.failure?.hasPrefix("retention: ") == true)
                #expect(health.failure?.contains("created_at") == true)
                #expect(try Self.failures(of: "retention", metrics) == 1)
                #expect(try Self.lastSuccess(of: "partitions", metrics) > 0)
                #expect(try metrics.expectGauge("liveline_table_bytes", [("table", "events")]).lastValue ?? 0 > 0)
                #expect(try metrics.expectGauge("liveline_table_bytes", [("table", "deliveries")]).lastValue ?? 0 > 0)
                #expect(try metrics.expectGauge("liveline_log_partitions", [("when", "ahead")]).lastValue ?? 0 >= 2)

                try await admin.withConnection {
                    try $0.execute("ALTER TABLE log_partitioning RENAME TO partitioning_away")
                }
                await maintenance.keepPartitions()
                #expect(health.failure?.contains("retention: ") == true)
                #expect(health.failure?.contains("partitions: ") == true)
                #expect(try Self.failures(of: "partitions", metrics) == 1)

                try await admin.withConnection {
                    try $0.execute("ALTER TABLE idempotency_keys RENAME COLUMN created_away TO created_at")
                }
                await maintenance.applyRetention()
                #expect(health.failure?.hasPrefix("partitions: ") == true)
                #expect(try Self.lastSuccess(of: "retention", metrics) > 0)

                try await admin.withConnection {
                    try $0.execute("ALTER TABLE partitioning_away RENAME TO log_partitioning")
                }
                await maintenance.keepPartitions()
                #expect(health.failure == nil)
            }
        }
    }
}

import ActivityLifecycle
import BenchmarkSupport
import CanonicalJSON
import EmbeddedPostgres
import EventStore
import Foundation
import Logging
import Postgres

/// Seeds `count` activities whose stale dates come due over `window` seconds, then lets one
/// deadline worker (with its listener and notifier, as in `liveline serve`) apply them on the
/// real clock, and reports how far behind their due times the transitions were recorded.
@main
struct DeadlineBenchmark {
    static func main() async throws {
        let arguments = BenchmarkArguments()
        let count = arguments.option("--activities", 100_000)
        let window = arguments.option("--window", 60)
        let migrations = arguments.migrations
        var logger = Logger(label: "bench")
        logger.logLevel = .warning

        let database = try await BenchmarkDatabase.start(logger: logger)
        defer { database.stop() }
        let url = database.url
        let pool = try ConnectionPool(
            configuration: .init(connectionString: url, maximumConnections: 8),
            logger: logger
        )
        let notifier = AppendNotifier(pool: pool)
        let store = EventStore(pool: pool, lifecycle: Lifecycle(), notifier: notifier)
        try await Migrator.loading(from: migrations, pool: pool).migrate(logger: logger)
        let app = AppID(rawValue: "bench")!
        try await store.createApp(app, AppSettings(bundleID: "bench", maxOpen: 10_000_000), by: .commandLine)
        try await store.setGlobalMaxOpen(10_000_000, by: .commandLine)

        // Seeding takes a while: the first stale date is far enough ahead to be in the future
        // when the worker starts.
        let seedingStarted = ContinuousClock.now
        let firstDue = Timestamp.now() + .seconds(max(30, count / 600))
        let step = Duration.seconds(window) / count
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in 0..<8 {
                group.addTask {
                    for index in stride(from: client, to: count, by: 8) {
                        let request = Command.request(
                            .init(
                                activityType: "delivery",
                                content: ActivityContent(
                                    contentState: JSONObject(["i": .number(JSONNumber(index))]),
                                    staleDate: firstDue + step * index
                                )
                            )
                        )
                        try await store.execute(
                            request,
                            on: StreamID(app: app, activity: ActivityID(rawValue: "a\(index)")!),
                            at: .now()
                        )
                    }
                }
            }
            try await group.waitForAll()
        }
        report(
            "seeded \(count) activities in \(ContinuousClock.now - seedingStarted); stale dates from \(firstDue) over \(window) s"
        )
        guard Timestamp.now() < firstDue else {
            throw BenchmarkError("seeding overran the first due time; use a longer lead")
        }

        let listener = try AppendListener(connectionString: url, logger: logger)
        let worker = DeadlineWorker(store: store, listener: listener, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await listener.run() }
            group.addTask { try await notifier.run() }
            group.addTask { try await worker.run() }
            let lastDue = firstDue + step * (count - 1)
            while try await store.earliestDeadline().map({ $0 <= lastDue }) ?? false {
                try await Task.sleep(for: .seconds(1))
            }
            group.cancelAll()
        }

        let (applied, p50, p99, worst, span) = try await pool.withConnection { connection in
            let row = try connection.query(
                """
                SELECT count(*),
                       percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM recorded_at - occurred_at)),
                       percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM recorded_at - occurred_at)),
                       max(extract(epoch FROM recorded_at - occurred_at))::float8,
                       extract(epoch FROM max(recorded_at) - min(occurred_at))::float8
                FROM events WHERE type = 'activity.became_stale'
                """
            ).single!
            return (
                try row.decode(0, as: Int.self), try row.decode(1, as: Double.self), try row.decode(2, as: Double.self),
                try row.decode(3, as: Double.self), try row.decode(4, as: Double.self)
            )
        }
        report(String(format: "applied %d stale deadlines over %.1f s (due over %d s)", applied, span, window))
        report(String(format: "lag behind due time: p50 %.3f s, p99 %.3f s, max %.3f s", p50, p99, worst))
        await pool.shutdown()
    }
}

import ActivityLifecycle
import BenchmarkSupport
import CanonicalJSON
import EventStore
import Foundation
import LogArchive
import Logging
import Postgres

/// Erasing one device whose activities lie in archives (#59): writes a log of `--events` events
/// (activities of ten events, spread over every partition of the log that exists, one in
/// `--spread` of them the device's), builds its projection, retires it all into sealed archives,
/// then erases the device through the store and reports how long that took, what it changed, and
/// that no archive file changed (their SHA-256 before and after), and how much the keys take;
/// then erases `--erase-activities` archived activities one at a time. Every activity's content is the
/// same unless `--varied-content`: then each has its own courier, position and times.
@main
struct ErasureBenchmark {
    static let app = AppID(rawValue: "bench")!
    static let device = "target-device"

    static func main() async throws {
        let arguments = BenchmarkArguments()
        let events = arguments.option("--events", 10_000_000)
        let spread = arguments.option("--spread", 10_000)
        let contentState: StaticString =
            arguments.flag("--varied-content") ? variedContentState : repetitiveContentState
        let migrations = arguments.migrations
        var logger = Logger(label: "bench")
        logger.logLevel = .warning

        let database = try await BenchmarkDatabase.start(logger: logger)
        defer { database.stop() }
        let folder = ArchiveFolder(path: "/tmp/liveline-erasure-bench-\(getpid())")
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let pool = try ConnectionPool(
            configuration: .init(connectionString: database.url, maximumConnections: 4),
            logger: logger
        )
        let store = EventStore(pool: pool, lifecycle: Lifecycle())
        try await Migrator.loading(from: migrations, pool: pool).migrate(logger: logger)
        _ = try await store.createPartitions()
        try await store.createApp(app, AppSettings(bundleID: "bench", maxOpen: 10_000_000), by: .commandLine)

        let activities = events / 10
        var started = ContinuousClock.now
        try await writeLog(activities: activities, spread: spread, contentState: contentState, pool)
        report("wrote \(activities * 10) events of \(activities) activities in \(ContinuousClock.now - started)")
        started = ContinuousClock.now
        _ = try await ProjectionReplay(store: store).run(swap: true)
        report("built the projection in \(ContinuousClock.now - started)")

        started = ContinuousClock.now
        let policy = RetentionPolicy(retention: .seconds(1), archive: folder, workShare: 1)
        let later: Timestamp = .now() + .seconds(10 * 86_400)
        let retired: [RetiredPartition] = try await store.retirePartitions(policy, asOf: later) ?? []
        let archives: [ArchiveManifest] = retired.compactMap { $0.table == "events" ? $0.archive : nil }
        let archived: Int = archives.map(\.rows).reduce(0, +)
        let took = ContinuousClock.now - started
        report(
            "archived \(archived) events in \(archives.filter { $0.rows > 0 }.count) archives of "
                + "\(archives.map(\.file.bytes).reduce(0, +)) bytes in \(took) "
                + "(\(Int(Double(archived) / took.seconds)) events/s, every table's retirement)"
        )
        let before = try checksums(folder)

        started = ContinuousClock.now
        let erasure = try await store.requestErasure(
            .device(DeviceID(rawValue: device)!),
            in: app,
            by: .commandLine
        )
        let requested = ContinuousClock.now - started
        try await store.eraseWaitingActivities()
        let erased = ContinuousClock.now - started
        let finished = try await store.erasure(erasure.id)
        report(
            "erased device \(device): \(finished?.erased ?? 0) of \(erasure.activities) activities, "
                + "finished \(finished?.finishedAt != nil); requested in \(requested), done in \(erased)"
        )
        let after = try checksums(folder)
        report(
            "archives: \(before.count) before, \(after.count) after; "
                + (before == after ? "every file unchanged (size and SHA-256, each read back)" : "CHANGED")
        )
        let (left, nodes, devices): (Int64, Int64, Int64) = try await pool.withConnection { connection in
            let row = try connection.query(
                """
                SELECT (SELECT count(*) FROM device_references WHERE reference = \(erasure.reference) AND key IS NOT NULL) AS left,
                    pg_total_relation_size('archive_key_nodes') AS nodes, pg_total_relation_size('device_references') AS devices
                """
            ).single!
            return (try row.decode("left"), try row.decode("nodes"), try row.decode("devices"))
        }
        report(
            "the device's key left: \(left); the keys of \(activities) archived activities take \(nodes + devices) bytes "
                + "(the key tree \(nodes), the devices' references and keys \(devices))"
        )
        guard before == after, left == 0, finished?.finishedAt != nil
        else { throw BenchmarkError("the erasure did not do what it must") }

        // Activities erased one at a time, another device's each: a puncture of the tree each.
        let alone = arguments.option("--erase-activities", 100)
        started = ContinuousClock.now
        for index in 0..<alone {
            let activity = ActivityID(rawValue: "a\(index * (activities / alone) + 1)")!
            _ = try await store.requestErasure(.activity(activity), in: app, by: .commandLine)
        }
        try await store.eraseWaitingActivities()
        let punctured = ContinuousClock.now - started
        let (count, bytes): (Int64, Int64) = try await pool.withConnection { connection in
            let row = try connection.query(
                "SELECT count(*) AS n, pg_total_relation_size('archive_key_nodes') AS bytes FROM archive_key_nodes"
            ).single!
            return (try row.decode("n"), try row.decode("bytes"))
        }
        report(
            "erased \(alone) archived activities one at a time in \(punctured) "
                + "(\(Int(punctured.seconds * 1000 / Double(alone))) ms each); the key tree keeps \(count) nodes, \(bytes) bytes"
        )
        guard try checksums(folder) == before else { throw BenchmarkError("an archive changed") }
    }

    /// The log, in bulk: `activities` of ten events (requested with content and a device, seven
    /// updates, ended with immediate dismissal, dismissed), spread round-robin over the log's
    /// partitions by the time their streams began; one in `spread` is the device's.
    static func writeLog(
        activities: Int,
        spread: Int,
        contentState: StaticString,
        _ pool: ConnectionPool
    ) async throws {
        let batch = 5_000  // 50,000 events per transaction: under the 65,536 positions a transaction has
        for first in stride(from: 0, to: activities, by: batch) {
            try await pool.withConnection { connection in
                try connection.execute(
                    """
                    WITH parts AS (
                        SELECT row_number() OVER (ORDER BY from_time) - 1 AS k,
                            greatest(from_time, now() - interval '30 days') AS began
                        FROM log_partitions WHERE parent = 'events' AND retired_at IS NULL
                    ), steps AS (
                        SELECT i, v, p.began AS began,
                            timestamptz '2026-11-21 08:00:00+00' + make_interval(secs => i * 0.001 + least(v - 1, 8)) AS at
                        FROM generate_series(\(first), least(\(first + batch), \(activities)) - 1) AS i
                        CROSS JOIN generate_series(1, 10) AS v
                        JOIN parts p ON p.k = i % (SELECT count(*) FROM parts)
                    )
                    INSERT INTO events (position, transaction_id, app_id, activity_id, version, type, data, caused_by,
                        occurred_at, recorded_at, stream_recorded_at)
                    SELECT pg_current_xact_id()::text::bigint * 65536 + row_number() OVER (ORDER BY i, v) - 1,
                        pg_current_xact_id(), \(app.rawValue), 'a' || i, v,
                        CASE WHEN v = 1 THEN 'activity.requested' WHEN v <= 8 THEN 'activity.updated'
                             WHEN v = 9 THEN 'activity.ended' ELSE 'activity.dismissed' END,
                        CASE WHEN v = 1 THEN jsonb_build_object('activityType', 'delivery',
                                'attributes', jsonb_build_object('order', 'A-' || i),
                                'content', jsonb_build_object('contentState', \(fragment: contentState)),
                                'deviceId', CASE WHEN i % \(spread) = 0 THEN \(device) ELSE 'd-' || (i % 50000) END)
                             WHEN v <= 8 THEN jsonb_build_object('content', jsonb_build_object('contentState',
                                \(fragment: contentState)), 'priority', 5)
                             WHEN v = 9 THEN jsonb_build_object('reason', 'app', 'dismissalPolicy', 'immediate',
                                'dismissalDate', to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
                             ELSE jsonb_build_object('reason', 'immediate') END,
                        (CASE WHEN v = 10 THEN 'system' ELSE 'app' END)::event_cause,
                        at, at, began
                    FROM steps
                    """
                )
            }
        }
    }

    /// The content of activity `i` at version `v`: the same for every activity.
    static let repetitiveContentState: StaticString = """
        CASE WHEN v = 1 THEN jsonb_build_object('stage', 'packed')
            ELSE jsonb_build_object('stage', 'step ' || v, 'eta', 40 - v) END
        """
    /// The content of activity `i` at version `v`: its courier, a position and an ETA of its own.
    static let variedContentState: StaticString = """
        jsonb_build_object(
            'stage', (ARRAY['packed', 'picked up', 'on the way', 'nearby', 'at the door'])[1 + (i + v) % 5],
            'eta', (i * 7 + v * 13) % 60,
            'courier', 'Courier ' || substr(md5(i::text), 1, 8),
            'position', jsonb_build_array(round(52 + (i % 1000) / 1000.0 + v / 10000.0, 5),
                round(13 + (i % 997) / 1000.0 - v / 10000.0, 5)))
        """

    /// The archives' manifests — each file's size and SHA-256 —, every file read back and checked
    /// against its own (`ArchiveFolder.read` throws when one differs).
    static func checksums(_ folder: ArchiveFolder) throws -> [ArchiveManifest] {
        let manifests = try folder.manifests()
        for manifest in manifests { try folder.read(manifest) { _, _ in } }
        return manifests
    }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

import ActivityLifecycle
import CanonicalJSON
import Foundation
import LogArchive
import MetricsTestKit
import Postgres
import Synchronization
import TestSupport
import Testing

@testable import EventStore

@Suite("Retention: settled partitions are archived, detached and dropped, with their activities")
struct RetentionTests {
    let fixture: StoreFixture
    let archive: ArchiveFolder

    init() async throws {
        fixture = try await StoreFixture.make()
        archive = ArchiveFolder(
            path: FileManager.default.temporaryDirectory.appendingPathComponent("archives-\(UUID().uuidString)").path
        )
    }

    /// A full share of the time: these tests are about what a retirement does, not its pace
    /// (paced, it rests for most of a minute here, and longer on a loaded machine, which ran
    /// out the waits beside it). A paced one has its own test.
    private var policy: RetentionPolicy {
        RetentionPolicy(retention: .seconds(24 * 3600), archive: archive, workShare: 1)
    }

    private func query<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await TestDatabase.withPool(fixture.database) { pool in try await pool.withConnection(body) }
    }

    /// The database's clock `days` from now: retirement asked about a later day.
    private func databaseNow(plusDays days: Int) async throws -> Timestamp {
        let now: PostgresTimestamp = try await query { try $0.query("SELECT now() AS now").single!.decode("now") }
        return Timestamp(now) + .seconds(days * 24 * 3600)
    }

    /// The log's partition that holds the streams begun now.
    private func currentPartition() async throws -> String {
        try await query { connection in
            try connection.query(
                """
                SELECT table_name FROM log_partitions
                WHERE parent = 'events' AND from_time <= now() AND now() < to_time
                """
            ).single!.decode("table_name")
        }
    }

    /// The log's events as (stream, version, type, position), in stream and version order.
    private func log() async throws -> [String] {
        try await query { connection in
            try connection.query(
                """
                SELECT app_id || '/' || activity_id || ' v' || version || ' ' || type || ' @' || position AS line
                FROM events ORDER BY app_id, activity_id, version
                """
            ).map { try $0.decode("line") }
        }
    }

    /// What a retirement as of `asOf` retired (this test's process is the only one retiring).
    private func retire(asOf: Timestamp) async throws -> [RetiredPartition] {
        try #require(await fixture.withStore { try await $0.retirePartitions(policy, asOf: asOf) })
    }

    /// Requests an activity and ends it with an immediate dismissal: its partition can settle.
    private func requestAndDismiss(_ name: String) async throws {
        try await fixture.withStore { store in
            try await store.execute(requestCommand(), on: fixture.stream(name), at: fixture.now)
            try await store.execute(.end(.init(dismissal: .immediate)), on: fixture.stream(name), at: fixture.now)
        }
    }

    private func projectedActivities() async throws -> Int {
        try await query {
            Int(try $0.query("SELECT count(*) AS n FROM activities").single!.decode("n", as: Int64.self))
        }
    }

    private func remoteStarts() async throws -> Int {
        try await query {
            Int(try $0.query("SELECT count(*) AS n FROM remote_starts").single!.decode("n", as: Int64.self))
        }
    }

    @Test("a partition waits for its last activity's dismissal; then it is archived, dropped, and its activities go")
    func retirement() async throws {
        try await fixture.withStore { store in
            for name in ["a", "b"] {
                try await store.execute(requestCommand(device: "d-\(name)"), on: fixture.stream(name), at: fixture.now)
            }
            try await store.execute(updateCommand(2), on: fixture.stream("a"), at: fixture.now + .seconds(1))
            // A start APNs accepted for `a` (as a remote start's would be): it goes with the activity.
            let start = AcceptedStart(stream: fixture.stream("a"), position: 1, token: "aa01", acceptedAt: fixture.now)
            try await store.recordDeliveries(DeliveryWrites(acceptedStarts: [start]), cursors: [:], worker: "test")
            try await store.execute(
                .end(.init(dismissal: .immediate)),
                on: fixture.stream("a"),
                at: fixture.now + .seconds(2)
            )
        }
        #expect(try await remoteStarts() == 1)
        let current = try await currentPartition()
        let later = try await databaseNow(plusDays: 3)

        // `b` is still active: its partition stays, whatever the time.
        let first = try await retire(asOf: later)
        #expect(!first.map(\.partition).contains(current))
        #expect(first.contains { $0.partition == "events_before_partitions" })
        let logBefore = try await log()
        #expect(logBefore.count == 5)

        try await fixture.withStore { store in
            try await store.execute(
                .end(.init(dismissal: .immediate)),
                on: fixture.stream("b"),
                at: fixture.now + .seconds(3)
            )
        }
        let logWhole = try await log()
        let positions: [Int64] = try await query { connection in
            try connection.query("SELECT position FROM events ORDER BY position").map { try $0.decode("position") }
        }
        // Settled now; retired once the retention has passed since.
        #expect(
            try await retire(asOf: later - .seconds(86400 * 2))
                .isEmpty
        )
        let retired = try await retire(asOf: later)
        let partition = try #require(retired.first { $0.partition == current })
        #expect(partition.table == "events")
        #expect(partition.activitiesRemoved == 2)

        // The archive holds every event, in stream order, with when it committed.
        let manifest = try #require(partition.archive)
        #expect(manifest.rows == logWhole.count)
        #expect(manifest.firstPosition == positions.first)
        #expect(manifest.lastPosition == positions.last)
        var archived: [String] = []
        try archive.read(manifest) { header, row in
            let field = { (name: String) in row[header.firstIndex(of: name)!]! }
            archived.append(
                "\(field("app_id"))/\(field("activity_id")) v\(field("version")) \(field("type")) @\(field("position"))"
            )
            #expect(header.suffix(2) == ["committed_at", "sealed"])
        }
        #expect(archived == logWhole)
        #expect(try archive.manifests().contains(manifest))

        // Gone from the database: the rows, the projection, the table; recorded as retired.
        #expect(try await log().isEmpty)
        #expect(try await projectedActivities() == 0)
        #expect(try await remoteStarts() == 0)
        let (present, retiredAt, recorded): (Bool, Bool, Bool) = try await query { connection in
            let row = try connection.query(
                """
                SELECT to_regclass(\(current)) IS NOT NULL AS present, retired_at IS NOT NULL AS retired,
                    archive ->> 'partition' = table_name AS recorded
                FROM log_partitions WHERE table_name = \(current)
                """
            ).single!
            return (try row.decode("present"), try row.decode("retired"), try row.decode("recorded"))
        }
        #expect(!present && retiredAt && recorded)
        // Dashboards still list it, without a size, with its archive.
        let listed: Int64 = try await query { connection in
            try connection.query(
                """
                SELECT archived_rows FROM log_partition_sizes
                WHERE partition = \(current) AND bytes IS NULL AND retired_at IS NOT NULL
                """
            ).single!.decode("archived_rows")
        }
        #expect(listed == Int64(logWhole.count))
    }

    @Test("nothing is dropped while the archive cannot be written; the next run finishes")
    func archiveFailureDropsNothing() async throws {
        try await requestAndDismiss("a")
        let logBefore = try await log()
        let current = try await currentPartition()
        // A file where the folder should be.
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: archive.path))
        let later = try await databaseNow(plusDays: 3)
        await #expect(throws: (any Error).self) {
            try await retire(asOf: later)
        }
        #expect(try await log() == logBefore)
        #expect(try await projectedActivities() == 1)

        try FileManager.default.removeItem(atPath: archive.path)
        let retired = try await retire(asOf: later)
        #expect(retired.contains { $0.partition == current && $0.archive?.rows == logBefore.count })
        #expect(try await log().isEmpty)
        #expect(try await projectedActivities() == 0)
    }

    @Test("an archive copied in chunks of any size holds what one statement reads, in key order")
    func chunkedCopy() async throws {
        try await fixture.withStore { store in
            for name in ["b", "a", "c"] {
                try await store.execute(requestCommand(device: "d-\(name)"), on: fixture.stream(name), at: fixture.now)
            }
            for version in 2...4 {
                for name in ["c", "a"] {
                    try await store.execute(
                        updateCommand(version),
                        on: fixture.stream(name),
                        at: fixture.now + .seconds(version)
                    )
                }
            }
        }
        let current = try await currentPartition()
        let partition = RetiringPartition(name: current, parent: "events", from: "", to: "", archived: false)
        let copies: [(rows: Int, csv: [UInt8])] = try await query { connection in
            try [1, 2, 3, 7, 5_000].map { chunkRows in
                var csv: [UInt8] = []
                var pauses = 0
                let rows = try PartitionRetirementQueries.copy(
                    partition,
                    chunkRows: chunkRows,
                    connection,
                    into: { csv += $0 },
                    pause: { pauses += 1 }
                )
                #expect(pauses == (rows + chunkRows - 1) / chunkRows)
                return (rows, csv)
            }
        }
        let lines = String(decoding: copies.last!.csv, as: UTF8.self).split(separator: "\n")
        #expect(copies.last!.rows == 9)
        #expect(lines.count == 10)
        #expect(lines.first?.hasPrefix("position,") == true)
        // Streams by id, each in version order.
        let order = lines.dropFirst().map { line in
            let fields = line.split(separator: ",")
            return "\(fields[3]) v\(fields[4])"
        }
        #expect(order == ["a v1", "a v2", "a v3", "a v4", "b v1", "c v1", "c v2", "c v3", "c v4"])
        // Each copy seals with nonces of its own: the same rows, whose sealed data opens the same.
        let keys = try await fixture.withStore { try await $0.archiveKeys() }
        let opened = try copies.map { copy in try Self.openedRows(copy.csv, keys: keys) }
        for (copy, rows) in zip(copies, opened) {
            #expect(copy.rows == 9)
            #expect(rows == opened.last!)
        }
        #expect(opened.last!.allSatisfy { $0.last! != nil })
    }

    @Test(
        "a paced retirement stops when its task is cancelled, having dropped nothing unarchived; the next run finishes"
    )
    func cancelledRetirementStops() async throws {
        try await requestAndDismiss("a")
        let logBefore = try await log()
        let current = try await currentPartition()
        let later = try await databaseNow(plusDays: 3)
        // Working 1 % of the time, each piece of work is followed by a rest of up to a second.
        let slow = RetentionPolicy(retention: .seconds(86400), archive: archive, workShare: 0.01)
        let run = Task { try await fixture.withStore { try await $0.retirePartitions(slow, asOf: later) } }
        try await Task.sleep(for: .milliseconds(300))
        let cancelled = ContinuousClock.now
        run.cancel()
        await #expect(throws: CancellationError.self) { try await run.value }
        // At its next rest (a second at most); left to run, it would rest a second after each of
        // the many steps of every partition due.
        #expect(ContinuousClock.now - cancelled < .seconds(15))
        let retiredSoFar: [String] = try await query { connection in
            try connection.query("SELECT table_name FROM log_partitions WHERE retired_at IS NOT NULL")
                .map { try $0.decode("table_name") }
        }
        #expect(!retiredSoFar.contains(current))
        #expect(try await log() == logBefore)

        let retired = try await retire(asOf: later)
        #expect(retired.contains { $0.partition == current && $0.archive?.rows == logBefore.count })
        #expect(try await log().isEmpty)
        #expect(try await projectedActivities() == 0)
    }

    @Test(
        "a retirement interrupted after its archive, detach and first index dropped is finished without archiving again"
    )
    func interruptedRetirementResumes() async throws {
        try await requestAndDismiss("a")
        let current = try await currentPartition()
        let later = try await databaseNow(plusDays: 3)
        // The first steps of a run that then stopped: settled, archived, detached.
        let manifest: ArchiveManifest = try await query { [archive] connection in
            _ = try PartitionRetirementQueries.settleLogPartitions(asOf: later, connection)
            var partition: RetiringPartition?
            while let next = try PartitionRetirementQueries.nextToRetire(
                retention: .seconds(86400),
                asOf: later,
                connection
            ) {
                if next.name == current {
                    partition = next
                    break
                }
                try PartitionRetirementQueries.markRetired(next, connection)
            }
            let found = try #require(partition)
            let written = try EventStore.archive(found, into: archive, archivedAt: later, connection)
            try PartitionRetirementQueries.detach(found, connection)
            // And its first index dropped.
            let indexes = try PartitionRetirementQueries.indexes(of: found, connection)
            #expect(indexes.count > 1)
            try PartitionRetirementQueries.dropIndex(indexes[0], of: found, connection)
            #expect(try PartitionRetirementQueries.indexes(of: found, connection) == Array(indexes.dropFirst()))
            return written
        }
        #expect(try await log().isEmpty)
        #expect(try await projectedActivities() == 1)

        let retired = try await retire(asOf: later)
        let resumed = try #require(retired.first { $0.partition == current })
        #expect(resumed.archive == nil)
        #expect(resumed.activitiesRemoved == 1)
        #expect(try await projectedActivities() == 0)
        #expect(try archive.manifests().filter { $0.partition == current } == [manifest])
        let present: Bool = try await query {
            try $0.query("SELECT to_regclass(\(current)) IS NOT NULL AS p").single!.decode("p")
        }
        #expect(!present)
    }

    @Test("one process retires at a time: while another does, a run retires nothing and says so")
    func oneRetirerAtATime() async throws {
        let later = try await databaseNow(plusDays: 3)
        try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { other in
                try other.execute("SELECT pg_advisory_lock(hashtextextended('liveline_retire_partitions', 0))")
            }
            // The pool keeps that connection, and its session keeps the lock, until it closes.
            let busy = try await fixture.withStore { try await $0.retirePartitions(policy, asOf: later) }
            #expect(busy == nil)
            #expect(try await log().isEmpty)
        }
        #expect(try await retire(asOf: later).contains { $0.partition == "events_before_partitions" })
    }

    @Test("a session that follows the log's tail reads it whole while partitions are dropped and created under it")
    func tailReaderOutlivesPartitionChanges() async throws {
        let later = try await databaseNow(plusDays: 3)
        // One connection: every read runs in the session whose plans the changes invalidate.
        try await fixture.withStore(connections: 1) { store in
            /// The versions of the events after `position`, once `count` are readable (transactions
            /// of the tests running beside this one hold the stable position back for a moment).
            func versions(after position: Int64 = 0, app: AppID? = nil, count: Int) async throws -> [Int] {
                var events: [StoredEvent] = []
                try await DatabaseWaits.waitUntil("\(count) events are readable") {
                    events = try await store.events(after: position, app: app, limit: 100)
                    return events.count >= count
                }
                return events.map(\.event.version)
            }
            try await store.execute(requestCommand(), on: fixture.stream("a"), at: fixture.now)
            try await store.execute(updateCommand(2), on: fixture.stream("a"), at: fixture.now + .seconds(1))
            // More reads than PostgreSQL makes before it keeps a plan.
            for _ in 0..<8 {
                #expect(try await versions(count: 2) == [1, 2])
                #expect(try await versions(app: fixture.app, count: 2) == [1, 2])
            }
            let retired = try #require(try await store.retirePartitions(policy, asOf: later))
            #expect(retired.contains { $0.partition == "events_before_partitions" })
            _ = try await query {
                try $0.execute("UPDATE log_partitioning SET partition_interval = '1 hour', partitions_ahead = 100")
            }
            #expect(try await store.createPartitions() > 0)

            try await store.execute(updateCommand(3), on: fixture.stream("a"), at: fixture.now + .seconds(2))
            #expect(try await versions(count: 3) == [1, 2, 3])
            let second = try await store.events(after: 0, limit: 2)[1].position
            #expect(try await versions(after: second, app: fixture.app, count: 1) == [3])
        }
        // Dashboards may follow the tail the same way.
        let dashboard = fixture.database + " options='-c role=liveline_dashboard'"
        try await TestDatabase.withPool(dashboard) { pool in
            try await DatabaseWaits.waitUntil("the dashboard role reads the three events") {
                try await pool.withConnection { connection in
                    try connection.query("SELECT count(*) AS n FROM liveline_events_after(0, 10)").single!
                        .decode("n", as: Int64.self) == 3
                }
            }
        }
    }

    @Test("retirement waits for no reader of apps: no table split by time references it")
    func retirementLeavesAppsAlone() async throws {
        try await requestAndDismiss("a")
        let later = try await databaseNow(plusDays: 3)
        try await TestDatabase.withPool(fixture.database) { admin in
            let (pids, ended) = await DatabaseWaits.hold(
                [("reader of apps", { try $0.execute("SELECT count(*) FROM apps") })],
                on: admin
            )
            let finished = Mutex(false)
            let retirement = Task {
                defer { finished.withLock { $0 = true } }
                return try await retire(asOf: later)
            }
            // A key to `apps` would make the drop of a partition wait for the reader, and show it.
            try await DatabaseWaits.waitUntil("retirement finishes or waits for a lock") {
                if finished.withLock({ $0 }) { return true }
                return try await DatabaseWaits.lockWaiters(admin) > 0
            }
            #expect(try await DatabaseWaits.lockWaiters(admin) == 0, "retirement waits for the reader of apps")
            try await DatabaseWaits.terminate(pids["reader of apps"]!, admin)
            await ended.value
            let retired = try await retirement.value
            #expect(retired.contains { $0.table == "events" } && retired.contains { $0.table == "rejections" })
        }
    }

    @Test("a role that does not own the tables may not retire, and is told who does")
    func onlyTheOwnerRetires() async throws {
        try await fixture.withStore { store in try await store.checkMayRetirePartitions() }
        // The same database, as the role the server needs at least (conninfo: later keys win).
        let service = fixture.database + " options='-c role=liveline_service'"
        try await TestDatabase.withPool(service) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            await #expect(throws: RetentionNotPermitted.self) { try await store.checkMayRetirePartitions() }
        }
    }

    @Test("maintenance retires what is due, counts it, and degrades readiness while the archive cannot be written")
    func maintenanceRetires() async throws {
        try await fixture.withStore { store in
            try await store.execute(requestCommand(), on: fixture.stream("a"), at: fixture.now)
        }
        // The rows from before partitions settled two days ago: due under a day's retention.
        _ = try await query { connection in
            try connection.execute(
                """
                UPDATE log_partitions SET settled_at = now() - interval '2 days'
                WHERE table_name IN ('events_before_partitions', 'deliveries_before_partitions')
                """
            )
        }
        try Data("not a folder".utf8).write(to: URL(fileURLWithPath: archive.path))
        let metrics = TestMetrics()
        let health = MaintenanceHealth()
        try await fixture.withStore { store in
            let maintenance = LogMaintenance(
                store: store,
                configuration: .init(retention: policy),
                health: health,
                logger: TestDatabase.logger,
                metrics: metrics
            )
            await maintenance.applyRetention()
            #expect(health.failure?.hasPrefix("retention: ") == true)
            #expect(
                try metrics.expectCounter("liveline_maintenance_failures_total", [("job", "retention")]).totalValue
                    == 1
            )

            try FileManager.default.removeItem(atPath: archive.path)
            await maintenance.applyRetention()
            #expect(health.failure == nil)
            #expect(
                try metrics.expectCounter("liveline_log_partitions_retired_total", [("table", "events")]).totalValue
                    == 1
            )
            #expect(
                try metrics.expectCounter("liveline_log_partitions_retired_total", [("table", "deliveries")])
                    .totalValue == 1
            )
            #expect(try metrics.expectCounter("liveline_archived_bytes_total").totalValue > 0)
        }
        // The live activity and its partition are untouched.
        #expect(try await log().count == 1)
        #expect(
            Set(try archive.manifests().map(\.partition)) == [
                "events_before_partitions", "deliveries_before_partitions",
            ]
        )
    }

    /// The rows of an archive's CSV, each with its sealed value opened in place.
    private static func openedRows(_ csv: [UInt8], keys: ArchiveKeyRing) throws -> [[String?]] {
        var records = CSVRecords()
        var rows: [[String?]] = []
        try csv.withUnsafeBytes { bytes in try records.feed(bytes) { rows.append($0) } }
        var unsealer = ArchiveUnsealer(table: "events", keys: keys)
        return try rows.dropFirst().map { row in
            try row.dropLast() + [row.last!.flatMap { try unsealer.open($0, rowKey: row[0]!) }]
        }
    }
}

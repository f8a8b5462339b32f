import ActivityLifecycle
import CanonicalJSON
import Foundation
import Postgres
import TestSupport
import Testing

@testable import EventStore

@Suite("The log split by the time each stream began")
struct LogPartitionTests {
    /// Each event's partition and its stream's beginning, by stream and version.
    private static func placement(_ pool: ConnectionPool) async throws -> [String: [String]] {
        try await pool.withConnection { connection in
            var placed: [String: [String]] = [:]
            for row in try connection.query(
                """
                SELECT app_id || '/' || activity_id AS stream, tableoid::regclass::text AS partition
                FROM events ORDER BY app_id, activity_id, version
                """
            ) {
                placed[try row.decode("stream"), default: []].append(try row.decode("partition"))
            }
            return placed
        }
    }

    /// The tables split by time.
    private static let parents = [
        "events", "deliveries", "push_token_invalidations", "rejections", "reload_deliveries", "event_traces",
    ]

    /// The partitions of `parent`, oldest first, as `log_partitions` records them.
    private static func partitions(
        of parent: String,
        _ pool: ConnectionPool
    ) async throws -> [(name: String, from: String, to: String)] {
        try await pool.withConnection { connection in
            try connection.query(
                """
                SELECT table_name, from_time::text AS from_time, to_time::text AS to_time FROM log_partitions
                WHERE parent = \(parent) ORDER BY to_time
                """
            ).map { (try $0.decode("table_name"), try $0.decode("from_time"), try $0.decode("to_time")) }
        }
    }

    /// Partitions of an hour from now on, a hundred of them ahead: past the daily partitions
    /// (up to three days ahead, by the time of day).
    private static func hourlyPartitionsAhead(_ pool: ConnectionPool) async throws {
        try await pool.withConnection { connection in
            try connection.execute("UPDATE log_partitioning SET partition_interval = '1 hour', partitions_ahead = 100")
        }
    }

    /// Whether each table's partitions follow one another, the first holding the rows from before
    /// partitions.
    private static func partitionsFollowOn(_ pool: ConnectionPool) async throws -> Bool {
        for parent in parents {
            let made = try await partitions(of: parent, pool)
            guard made.first?.name == "\(parent)_before_partitions",
                zip(made, made.dropFirst()).allSatisfy({ $0.to == $1.from })
            else { return false }
        }
        return true
    }

    @Test("each table's partitions follow one another up to two intervals ahead; creating them again creates none")
    func partitionsAhead() async throws {
        let fixture = try await StoreFixture.make()
        try await TestDatabase.withPool(fixture.database) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            #expect(try await store.createPartitions() == 0)
            #expect(try await Self.partitionsFollowOn(pool))
            let aheadOfNow: Bool = try await pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT bool_and(ahead) AS ahead FROM (
                        SELECT max(to_time) >= now() + interval '2 days' AS ahead FROM log_partitions GROUP BY parent
                    ) AS p
                    """
                ).single!.decode("ahead")
            }
            #expect(aheadOfNow)

            // A shorter interval: the next partitions are that long, and still follow on. A hundred
            // hours ahead reach past the daily partitions (up to three days ahead, by the time of day).
            try await Self.hourlyPartitionsAhead(pool)
            #expect(try await store.createPartitions() > 0)
            #expect(try await Self.partitionsFollowOn(pool))
            let hours: Int = try await pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT count(*)::bigint AS hours FROM log_partitions WHERE from_time + interval '1 hour' = to_time
                    """
                ).single!.decode("hours")
            }
            #expect(hours > 0)
        }
    }

    @Test("each table's partitions are created in a transaction of their own; only a table split by time has them")
    func oneTableATransaction() async throws {
        let fixture = try await StoreFixture.make()
        try await TestDatabase.withPool(fixture.database) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            try await Self.hourlyPartitionsAhead(pool)
            #expect(try await store.createPartitions(workShare: 0.5) > 0)
            // `created_at` is the time its transaction began: one per table, each its own.
            let began: [(table: String, times: Int64, began: String)] = try await pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT parent, count(DISTINCT created_at) AS times, min(created_at)::text AS began
                    FROM log_partitions WHERE from_time + interval '1 hour' = to_time
                    GROUP BY parent ORDER BY parent
                    """
                ).map { (try $0.decode("parent"), try $0.decode("times"), try $0.decode("began")) }
            }
            #expect(began.map(\.table) == Self.parents.sorted())
            #expect(began.allSatisfy { $0.times == 1 })
            #expect(Set(began.map(\.began)).count == Self.parents.count)

            await #expect(throws: PostgresError.self) {
                try await pool.withConnection { try $0.execute("SELECT liveline_create_partitions('activities')") }
            }
        }
    }

    @Test("a creation stopped between two tables is finished by the next: the partitions still follow on")
    func stoppedCreationResumes() async throws {
        let fixture = try await StoreFixture.make()
        try await TestDatabase.withPool(fixture.database) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            try await Self.hourlyPartitionsAhead(pool)
            // A share so small that the rest after the first table outlasts the test's patience.
            let stopped = Task { try await store.createPartitions(workShare: 0.0001) }
            try await DatabaseWaits.waitUntil("the first table's partitions are made") {
                try await Self.partitions(of: Self.parents.sorted()[0], pool).count > 10
            }
            stopped.cancel()
            await #expect(throws: CancellationError.self) { try await stopped.value }
            let hourly: Int = try await pool.withConnection { connection in
                Int(
                    try connection.query(
                        "SELECT count(DISTINCT parent) AS n FROM log_partitions WHERE from_time + interval '1 hour' = to_time"
                    ).single!.decode("n", as: Int64.self)
                )
            }
            #expect(hourly == 1, "only the first table was done when it stopped")

            #expect(try await store.createPartitions() > 0)
            #expect(try await Self.partitionsFollowOn(pool))
            #expect(try await store.createPartitions() == 0)
        }
    }

    @Test("a creation beside a concurrent detach of the same table: both finish, neither deadlocks")
    func creationBesideADetach() async throws {
        let fixture = try await StoreFixture.make()
        try await TestDatabase.withPool(fixture.database) { admin in
            // Each partition's creation rests after its table is made, before the attach, until the
            // test opens the gate: a state that lasts, which the test cannot miss however late it looks.
            try await admin.withConnection { connection in
                try connection.execute("CREATE TABLE creation_gate (open boolean NOT NULL)")
                try connection.execute("INSERT INTO creation_gate VALUES (false)")
                try connection.execute(
                    """
                    CREATE FUNCTION rest_after_create() RETURNS event_trigger LANGUAGE plpgsql
                    AS $$ BEGIN
                        WHILE NOT (SELECT open FROM creation_gate) LOOP PERFORM pg_sleep(0.01); END LOOP;
                    END $$
                    """
                )
                try connection.execute(
                    """
                    CREATE EVENT TRIGGER rest_after_create ON ddl_command_end WHEN TAG IN ('CREATE TABLE')
                    EXECUTE FUNCTION rest_after_create()
                    """
                )
                try connection.execute("UPDATE log_partitioning SET partitions_ahead = 4")
            }
            let creation = Task {
                try await admin.withTransaction { connection in
                    try connection.execute("SELECT liveline_create_partitions('events')")
                }
            }
            try await DatabaseWaits.waitUntil("the creation rests after making a table") {
                try await admin.withConnection { connection in
                    try connection.query(
                        """
                        SELECT 1 FROM pg_stat_activity
                        WHERE datname = current_database() AND query LIKE '%liveline_create_partitions(%'
                            AND wait_event = 'PgSleep'
                        """
                    ).single != nil
                }
            }
            // Retirement's detach, meanwhile (the jobs run side by side): its second transaction
            // waits for the creation's, which holds `events` through the new table's LIKE; then the
            // creation goes on, and its attach must not wait for the detach in turn.
            let detach = Task {
                try await admin.withConnection { connection in
                    try connection.execute("ALTER TABLE events DETACH PARTITION events_before_partitions CONCURRENTLY")
                }
            }
            try await DatabaseWaits.waitUntil("the detach waits for the creation") {
                try await DatabaseWaits.lockWaiters(admin) >= 1
            }
            try await admin.withConnection { try $0.execute("UPDATE creation_gate SET open = true") }
            _ = try await detach.value
            _ = try await creation.value
            #expect(try await Self.partitions(of: "events", admin).count >= 4)
        }
    }

    @Test("every event of a stream lands in the partition of the time the stream began, however late it comes")
    func streamsStayWhole() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            for name in ["a", "b"] {
                try await store.execute(requestCommand(device: "d-\(name)"), on: fixture.stream(name), at: fixture.now)
            }
            // A batch of updates and an end, and the deadline worker's dismissal, in other transactions.
            for step in 2...4 {
                try await store.execute(updateCommand(step), on: fixture.stream("a"), at: fixture.now + .seconds(step))
            }
            try await store.execute(
                .end(.init(dismissal: .immediate)),
                on: fixture.stream("b"),
                at: fixture.now + .seconds(5)
            )
        }
        try await TestDatabase.withPool(fixture.database) { pool in
            let placed = try await Self.placement(pool)
            #expect(placed.count == 2)
            for (stream, partitions) in placed {
                #expect(Set(partitions).count == 1, "\(stream) spans \(partitions)")
                #expect(partitions.first != "events_before_partitions")
            }
            let sameBeginning: Bool = try await pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT bool_and(e.stream_recorded_at = a.stream_recorded_at) AS same
                    FROM events e JOIN activities a USING (app_id, activity_id)
                    """
                ).single!.decode("same")
            }
            #expect(sameBeginning)
        }
    }

    @Test(
        "a database migrated before partitions keeps every event, refusal and delivery, and its activities go on in the old table"
    )
    func upgradeKeepsTheLog() async throws {
        let database = try await TestDatabase.makeEmpty()
        let migrations = try Migration.load(from: TestDatabase.migrationsDirectory)
        let functions = try FunctionDefinition.load(from: TestDatabase.functionsDirectory)
        let app = AppID(rawValue: "upgraded")!
        let old = StreamID(app: app, activity: ActivityID(rawValue: "old")!)
        let ended = StreamID(app: app, activity: ActivityID(rawValue: "ended")!)
        let new = StreamID(app: app, activity: ActivityID(rawValue: "new")!)
        let now = Timestamp.now()
        let logQuery: PostgresQuery = """
            SELECT position, app_id, activity_id, version, type, data::text AS data, caused_by::text AS caused_by,
                   occurred_at::text AS occurred_at, recorded_at::text AS recorded_at
            FROM events ORDER BY position
            """
        func log(_ pool: ConnectionPool) async throws -> [String] {
            try await pool.withConnection { connection in
                try connection.query(logQuery).map { row in
                    try [
                        "position", "app_id", "activity_id", "version", "type", "data", "caused_by", "occurred_at",
                        "recorded_at",
                    ].map { name -> String in
                        name == "position" || name == "version"
                            ? "\(try row.decode(name, as: Int64.self))" : try row.decode(name, as: String.self)
                    }.joined(separator: " ")
                }
            }
        }
        // The refusals and deliveries, each with its id, its partition and what it says.
        func history(_ pool: ConnectionPool) async throws -> [String] {
            try await pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT tableoid::regclass::text || ' ' || id || ' ' || code || ' ' || occurred_at AS line
                    FROM rejections
                    UNION ALL
                    SELECT tableoid::regclass::text || ' ' || id || ' ' || outcome || ' ' || position FROM deliveries
                    ORDER BY 1
                    """
                ).map {
                    (try $0.decode("line", as: String.self)).replacingOccurrences(of: "_before_partitions", with: "")
                }
            }
        }
        try await TestDatabase.withPool(database) { pool in
            // The database as today's main left it: the numbered migrations before this one (with the
            // function texts they carry), and a log written through them.
            try await Migrator(migrations: migrations.filter { $0.version < 22 }, functions: [], pool: pool).migrate(
                logger: TestDatabase.logger
            )
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            // In that schema's columns (today's `createApp` writes settings it did not have yet).
            try await pool.withConnection { connection in
                try connection.execute(
                    "INSERT INTO apps (app_id, bundle_id, max_open) VALUES (\(app.rawValue), 'b', 10)"
                )
            }
            try await Self.appendAlone(requestCommand(), on: old, at: now, store)
            try await Self.appendAlone(updateCommand(2), on: old, at: now + .seconds(1), store)
            try await Self.appendAlone(requestCommand(), on: ended, at: now, store)
            try await Self.appendAlone(.end(.init(dismissal: .immediate)), on: ended, at: now + .seconds(1), store)
            let before = try await log(pool)
            #expect(before.count >= 4)
            let oldVersion = try #require(try await store.activity(old)).activity.version
            // A refusal, and a delivery as the worker records it.
            #expect(try await store.execute(updateCommand(2), on: ended, at: now + .seconds(2)).accepted == nil)
            try await pool.withConnection { connection in
                try connection.execute(
                    """
                    INSERT INTO deliveries (position, app_id, activity_id, version, outcome, attempt, attempted_at)
                    SELECT position, app_id, activity_id, version, 'awaiting_token', 0, now() FROM events LIMIT 1
                    """
                )
            }
            let historyBefore = try await history(pool)
            #expect(historyBefore.count == 2)
            let lastOldID: Int64 = try await pool.withConnection {
                try $0.query("SELECT max(id) AS id FROM rejections").single!.decode("id")
            }

            try await Migrator(migrations: migrations, functions: functions, pool: pool).migrate(
                logger: TestDatabase.logger
            )
            #expect(try await store.createPartitions() > 0)
            #expect(try await log(pool) == before)
            // Deliveries and refusals are kept where they were. Their old table is the partition of
            // every time up to the end of its newest row's interval (a day); the ids go on.
            #expect(try await history(pool) == historyBefore)
            #expect(try await store.execute(updateCommand(3), on: ended, at: now + .seconds(3)).accepted == nil)
            let (partition, newer, bound): (String, Bool, Bool) = try await pool.withConnection { connection in
                let row = try connection.query(
                    """
                    SELECT tableoid::regclass::text AS partition,
                        id > \(lastOldID) AS newer,
                        (SELECT to_time FROM log_partitions WHERE table_name = 'rejections_before_partitions')
                            = date_bin('1 day', r.recorded_at, '2000-01-01 00:00:00+00') + interval '1 day' AS bound
                    FROM rejections r ORDER BY id DESC LIMIT 1
                    """
                ).single!
                return (try row.decode("partition"), try row.decode("newer"), try row.decode("bound"))
            }
            #expect(partition == "rejections_before_partitions")
            #expect(newer && bound)

            try await store.execute(updateCommand(3), on: old, at: now + .seconds(2))
            try await store.execute(requestCommand(), on: new, at: now + .seconds(2))
            let placed = try await Self.placement(pool)
            #expect(placed["upgraded/old"]?.count == oldVersion + 1)
            #expect(placed["upgraded/old"]?.allSatisfy { $0 == "events_before_partitions" } == true)
            #expect(placed["upgraded/ended"]?.allSatisfy { $0 == "events_before_partitions" } == true)
            #expect(placed["upgraded/new"]?.contains("events_before_partitions") == false)
            #expect(try await store.activity(old)?.activity.version == oldVersion + 1)
        }
    }

    /// Appends one command as the store decides it, through the batch's function: the
    /// `liveline_append` of a database this old returns no refusal, which the store's lone
    /// statement reads.
    private static func appendAlone(
        _ command: Command,
        on stream: StreamID,
        at now: Timestamp,
        _ store: EventStore
    )
        async throws
    {
        let lifecycle = Lifecycle()
        let before = try await store.activity(stream)?.activity
        let context = DecisionContext(
            app: AppRules(maxOpen: 10, maxOpenPerDevice: nil, priorityBudgetPerHour: 10),
            globalMaxOpen: 1_000,
            open: OpenCounts(app: 0, global: 0, device: 0)
        )
        let events = try lifecycle.decide(command, for: before, at: now, context: context)
        let after = try #require(try events.reduce(before) { try lifecycle.evolve($0, with: $1) })
        let append = ActivityAppend(events, on: stream, from: before, to: after, lifecycle, idempotency: nil)
        try await store.pool.withConnection { connection in
            let refusal: String? = try connection.query(
                "SELECT refusal FROM liveline_append_batch(\(arguments: CommandQueries.arguments([append], recording: [])))"
            ).single!.decode("refusal")
            #expect(refusal == nil)
        }
    }
}

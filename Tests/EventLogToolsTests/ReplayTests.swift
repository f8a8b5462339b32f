import ActivityLifecycle
import CanonicalJSON
import EventLogTools
import EventStore
import Postgres
import Synchronization
import TestSupport
import Testing

@Suite("liveline replay: rebuilding the projection from the log, and comparing it")
struct ReplayTests {
    typealias Fixture = AuditTimelineTests

    /// The known life, plus activities left by the deadline worker's path in each state, one
    /// with a device.
    static func recordLog(_ store: EventStore) async throws {
        try await Fixture.recordKnownLife(store)
        for (index, staleAfter) in [60, 7200, 30].enumerated() {
            let stream = StreamID(app: Fixture.app, activity: ActivityID(rawValue: "live-\(index)")!)
            try await store.execute(
                .request(
                    .init(
                        activityType: "T",
                        content: ActivityContent(
                            contentState: .empty,
                            staleDate: Fixture.start + .seconds(Int64(staleAfter))
                        ),
                        deviceID: DeviceID(rawValue: "phone-\(index % 2)")
                    )
                ),
                on: stream,
                at: Fixture.start
            )
        }
        // Text that COPY must escape and JSON must quote, and a relevance score.
        let awkward = "tab\t newline\n return\r backslash\\ quote\" é 🚚 \\N"
        try await store.execute(
            .request(
                .init(
                    activityType: "T",
                    attributes: JSONObject([awkward: .string(awkward)]),
                    content: ActivityContent(
                        contentState: JSONObject(["text": .string(awkward), "n": .number(0.1)]),
                        relevanceScore: RelevanceScore(0.3)
                    )
                )
            ),
            on: StreamID(app: Fixture.app, activity: ActivityID(rawValue: "awkward")!),
            at: Fixture.start
        )
        _ = try await store.applyDueDeadlines(at: Fixture.start + .seconds(300), limit: 100)
    }

    static func withStore(
        connections: Int = 2,
        _ body: (EventStore, ConnectionPool) async throws -> Void
    ) async throws {
        let database = try await TestDatabase.makeMigrated()
        try await TestDatabase.withPool(database, maximumConnections: connections) { pool in
            try await body(EventStore(pool: pool, lifecycle: Lifecycle()), pool)
        }
    }

    static func compare(_ store: EventStore, batchSize: Int = 10_000) async throws -> ReplayReport {
        try await ProjectionReplay(store: store, batchSize: batchSize).run(swap: false)
    }

    @Test("a log made by the command path and the deadline worker equals its live projection")
    func identical() async throws {
        try await Self.withStore { store, _ in
            try await Self.recordLog(store)
            for batchSize in [1, 2, 10_000] {
                let report = try await Self.compare(store, batchSize: batchSize)
                #expect(report.isConsistent)
                #expect(ProjectionDifference.all(in: report).isEmpty)
                #expect(report.streams == 5)
                #expect(report.events == 8 + 3 + 2 + 1)
            }
            let swapped = try await ProjectionReplay(store: store).run(swap: true)
            #expect(swapped.swapped && swapped.isConsistent)
        }
    }

    @Test("a tampered field, a deleted row, a row without events and a drifted count are reported, then repaired")
    func tampered() async throws {
        try await Self.withStore { store, pool in
            try await Self.recordLog(store)
            let before = try await Self.liveRows(pool)
            try await pool.withConnection { connection in
                try connection.execute("UPDATE activities SET state = 'active' WHERE activity_id = 'live-0'")
                try connection.execute("DELETE FROM activities WHERE activity_id = 'live-1'")
                try connection.execute(
                    """
                    INSERT INTO activities
                    SELECT (jsonb_populate_record(a, '{"activity_id": "ghost"}')).* FROM activities a
                    WHERE activity_id = 'live-2'
                    """
                )
                try connection.execute("UPDATE device_open_counts SET open = open + 5 WHERE device_id = 'phone-1'")
            }
            let report = try await Self.compare(store)
            #expect(!report.isConsistent && !report.swapped)
            #expect(report.changedActivities == 3)
            let differences = ProjectionDifference.all(in: report)
            let byActivity = Dictionary(grouping: differences.filter { $0.activity != nil }) {
                $0.activity!.rawValue
            }
            #expect(byActivity["live-0"]?.map(\.field) == ["state"])
            #expect(byActivity["live-0"]?.first?.expected == "stale")
            #expect(byActivity["live-0"]?.first?.actual == "active")
            #expect(byActivity["live-1"]?.map(\.field) == ["projection"])
            #expect(byActivity["live-1"]?.first?.actual == "no row")
            #expect(byActivity["ghost"]?.map(\.field) == ["projection"])
            let counts = differences.filter { $0.activity == nil }
            #expect(counts.map(\.field) == ["openCount(device phone-1)"])
            #expect(counts.first?.expected == "1" && counts.first?.actual == "6")
            #expect(try await Self.liveRows(pool) != before, "comparing changes nothing")

            let repaired = try await ProjectionReplay(store: store).run(swap: true)
            #expect(repaired.swapped && repaired.changedActivities == 3)
            #expect(try await Self.compare(store).isConsistent)
            #expect(try await Self.liveRows(pool) == before, "the rows are those the commands wrote")
        }
    }

    @Test("an illegal transition inserted by hand is reported, and replay swaps nothing")
    func corruptLog() async throws {
        try await Self.withStore { store, pool in
            try await Self.recordLog(store)
            try await pool.withConnection { connection in
                try connection.execute(
                    "UPDATE activities SET content_state = '{\"x\": 1}' WHERE activity_id = 'live-1'"
                )
                try connection.execute(
                    """
                    INSERT INTO events (position, app_id, activity_id, version, type, caused_by, occurred_at)
                    VALUES (pg_current_xact_id()::text::bigint * 65536, \(Fixture.app.rawValue), 'live-0', 3,
                            'activity.started', 'system', '2027-01-15T09:00:00Z')
                    """
                )
            }
            let report = try await Self.compare(store)
            #expect(report.unfoldable.map(\.stream.activity.rawValue) == ["live-0"])
            let differences = ProjectionDifference.all(in: report)
            #expect(differences.map(\.field).sorted() == ["content", "log"])
            let swap = try await ProjectionReplay(store: store).run(swap: true)
            #expect(!swap.swapped)
            let content: String = try await pool.withConnection { connection in
                try connection.query("SELECT content_state::text FROM activities WHERE activity_id = 'live-1'")
                    .single!.decode(0)
            }
            #expect(content == #"{"x": 1}"#, "nothing was swapped")
        }
    }

    @Test("replay of one app leaves the other apps' rows alone")
    func oneApp() async throws {
        try await Self.withStore { store, pool in
            try await Self.recordLog(store)
            let other = AppID(rawValue: "other")!
            try await store.createApp(other, AppSettings(bundleID: "o"), by: .commandLine)
            let stream = StreamID(app: other, activity: ActivityID(rawValue: "x")!)
            try await store.execute(
                .request(.init(activityType: "T", content: ActivityContent(contentState: .empty))),
                on: stream,
                at: Fixture.start
            )
            try await pool.withConnection { connection in
                try connection.execute("UPDATE activities SET push_token = 'tampered'")
            }
            let report = try await ProjectionReplay(store: store, scope: .app(other)).run(swap: true)
            #expect(report.swapped && report.changedActivities == 1 && report.streams == 1)
            let tokens: [String?] = try await pool.withConnection { connection in
                try connection.query("SELECT push_token FROM activities ORDER BY app_id = 'other', activity_id")
                    .map { try $0.decode(0) }
            }
            #expect(tokens.last == .some(nil), "the app's row was rebuilt")
            #expect(tokens.dropLast().allSatisfy { $0 == "tampered" }, "the other app's rows were not")
        }
    }

    @Test("a second replay while one runs is refused")
    func oneAtATime() async throws {
        let database = try await TestDatabase.makeMigrated()
        let running = try Connection.connect(database)
        try running.execute("SELECT pg_advisory_lock(7610418230571501313)")
        try await TestDatabase.withPool(database) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            await #expect(throws: EventStoreError.replayInProgress) {
                try await ProjectionReplay(store: store).run(swap: true)
            }
        }
        withExtendedLifetime(running) {}
    }

    @Test("replay while commands keep appending loses nothing")
    func replayUnderLoad() async throws {
        try await Self.withStore(connections: 8) { store, pool in
            try await store.createApp(Fixture.app, AppSettings(bundleID: "b", maxOpen: 10_000), by: .commandLine)
            let running = RunningFlag()
            // Four writers, each living its own activities: request, five updates, end.
            let writers = Task {
                try await withThrowingTaskGroup(of: [String: Int].self) { group in
                    for writer in 0..<4 {
                        group.addTask {
                            var versions: [String: Int] = [:]
                            var index = 0
                            while running.isSet || index < 3 {
                                let id = "w\(writer)-\(index)"
                                let stream = StreamID(app: Fixture.app, activity: ActivityID(rawValue: id)!)
                                let commands: [Command] =
                                    [.request(.init(activityType: "T", content: ActivityContent(contentState: .empty)))]
                                    + (1...5).map { step in
                                        .update(
                                            .init(
                                                content: ActivityContent(
                                                    contentState: JSONObject(["step": .number(JSONNumber(step))])
                                                )
                                            )
                                        )
                                    } + [.end(.init(dismissal: .default))]
                                for command in commands {
                                    let result = try await store.execute(command, on: stream, at: Fixture.start)
                                    guard case .accepted(let activity, _) = result.outcome else {
                                        Issue.record("\(id): \(result.outcome)")
                                        break
                                    }
                                    versions[id] = activity.activity.version
                                }
                                index += 1
                            }
                            return versions
                        }
                    }
                    return try await group.reduce(into: [:]) { $0.merge($1) { first, _ in first } }
                }
            }
            // Each round tampers every live row first, so that the replay must rewrite rows whose
            // activities receive appends while it reads its snapshot: those must be folded again
            // with the new events, not swapped in as the snapshot had them.
            // Activities that are in the snapshot and go on receiving events during the rebuild.
            while try await pool.withConnection({ try $0.query("SELECT count(*) FROM events").single!.decode(0) }) < 40
            {
                try await Task.sleep(for: .milliseconds(20))
            }
            var caughtUp = 0
            for _ in 0..<40 where caughtUp == 0 {
                try await pool.withConnection { connection in
                    try connection.execute("UPDATE activities SET push_token = 'tampered'")
                }
                // Small batches make the snapshot phase long enough for appends to land meanwhile.
                let report = try await ProjectionReplay(store: store, batchSize: 2).run(swap: true)
                #expect(report.swapped)
                caughtUp += report.caughtUpEvents
            }
            running.clear()
            let acknowledged = try await writers.value
            #expect(caughtUp > 0, "some replay ran while appends landed")
            let final = try await Self.compare(store)
            #expect(ProjectionDifference.all(in: final).allSatisfy { $0.field == "pushToken" })
            let projected: [String: Int] = try await pool.withConnection { connection in
                Dictionary(
                    uniqueKeysWithValues: try connection.query("SELECT activity_id::text, version FROM activities")
                        .map { (try $0.decode(0, as: String.self), try $0.decode(1, as: Int.self)) }
                )
            }
            #expect(projected == acknowledged, "every acknowledged command is in the projection")
        }
    }

    /// Every column of every live row but the stripes (which replay may choose anew), as text.
    static func liveRows(_ pool: ConnectionPool) async throws -> [String] {
        try await pool.withConnection { connection in
            try connection.query(
                """
                SELECT (to_jsonb(a) - '{app_stripe,global_stripe}'::text[])::text FROM activities a
                ORDER BY app_id, activity_id
                """
            ).map { try $0.decode(0) }
        }
    }
}

/// A flag the test sets and its writer tasks read.
private final class RunningFlag: Sendable {
    private let value = Atomic(true)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func clear() { value.store(false, ordering: .relaxed) }
}

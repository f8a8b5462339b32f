import ActivityLifecycle
import CanonicalJSON
import Postgres
import TestSupport
import Testing

@testable import EventStore

@Suite("The command path: load, decide, append")
struct CommandPathTests {
    @Test(
        "the load, a lone append and a batch's statement are planned once per session, not again on every execution",
        arguments: ["%FROM liveline_batch_commands(%", "%, \"liveline_append\"(%", "%\"liveline_append_batch\"(%"]
    )
    func plannedOnce(statement: String) async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore(connections: 1) { store in
            let stream = fixture.stream("planned")
            try await store.execute(requestCommand(), on: stream, at: fixture.now)
            // Lone commands: each goes through liveline_append.
            for version in 2...30 {
                try await store.execute(updateCommand(version), on: stream, at: fixture.now + .seconds(version))
            }
            // Rejections are recorded through the batch's statement, even alone.
            try await store.execute(.end(.init(dismissal: .default)), on: stream, at: fixture.now + .seconds(31))
            for step in 32...61 {
                let result = try await store.execute(updateCommand(step), on: stream, at: fixture.now + .seconds(step))
                #expect(result.rejection != nil)
            }
            let plans = try await store.pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT generic_plans, custom_plans FROM pg_prepared_statements
                    WHERE statement LIKE \(statement)
                    ORDER BY generic_plans + custom_plans DESC LIMIT 1
                    """
                ).single.map { (generic: try $0.decode(0, as: Int.self), custom: try $0.decode(1, as: Int.self)) }
            }
            // PostgreSQL tries five custom plans before it compares them with the generic one.
            let load = try #require(plans)
            #expect(load.custom <= 5)
            #expect(load.generic >= 24)
        }
    }

    @Test(
        "on a new database, a generic plan looks an activity up by its primary key, not by an index of the app's activities",
        arguments: [
            // As the write path's statements look activities up, one per element of an array.
            """
            SELECT l.version FROM unnest($1::text[], $2::text[]) AS c(app_id, activity_id)
            LEFT JOIN LATERAL (SELECT a.version FROM activities a
                WHERE a.app_id = c.app_id AND a.activity_id = c.activity_id OFFSET 0) AS l ON true
            """,
            // As the readers do.
            "SELECT * FROM liveline_activity_rows r WHERE r.app_id = $1::text AND r.activity_id = $2::text",
        ]
    )
    func lookupsUseThePrimaryKey(statement: String) async throws {
        let database = try await TestDatabase.makeMigrated()
        let plan = try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            try await pool.withConnection { connection in
                try connection.executeScript("SET plan_cache_mode = force_generic_plan; PREPARE lookup AS \(statement)")
                let rows =
                    statement.contains("text[]")
                    ? try connection.query("EXPLAIN EXECUTE lookup('{a}', '{b}')")
                    : try connection.query("EXPLAIN EXECUTE lookup('a', 'b')")
                return try rows.map { try $0.decode(0, as: String.self) }.joined(separator: "\n")
            }
        }
        #expect(plan.contains("Index Scan using activities_pkey on activities"), "\(plan)")
    }

    @Test("a request, updates and an end are appended with their projection, which equals the fold of the stream")
    func lifecycle() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = fixture.stream("order-1")
            var now = fixture.now
            let requested = try await store.execute(requestCommand(staleDate: now + .seconds(600)), on: stream, at: now)
            #expect(requested.accepted?.activity.state == .active)
            #expect(requested.appended.map(\.event.type) == [.requested])
            now = now + .seconds(60)
            let updated = try await store.execute(updateCommand(2), on: stream, at: now)
            #expect(updated.accepted?.activity.version == 2)
            now = now + .seconds(60)
            let ended = try await store.execute(.end(.init(dismissal: .immediate)), on: stream, at: now)
            #expect(ended.appended.map(\.event.type) == [.ended, .dismissed])

            let projection = try #require(try await store.activity(stream))
            let events = try await store.events(of: stream)
            #expect(events.map(\.event.version) == [1, 2, 3, 4])
            #expect(zip(events, events.dropFirst()).allSatisfy { $0.position < $1.position })
            #expect(try store.lifecycle.fold(events.map(\.event), of: stream) == projection.activity)
            #expect(projection == ended.accepted)
            #expect(projection.nextDeadline == nil)
            #expect(events == requested.appended + updated.appended + ended.appended)
        }
    }

    @Test("a command whose clock reading is older than the stored last event is appended at that event's time")
    func clockBehindStoredEvent() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = fixture.stream("raced")
            try await store.execute(requestCommand(), on: stream, at: fixture.now)
            try await store.execute(updateCommand(2), on: stream, at: fixture.now + .seconds(10))
            // Another server read its clock 5 s earlier and commits second.
            let late = try await store.execute(updateCommand(3), on: stream, at: fixture.now + .seconds(5))
            #expect(late.appended.map(\.event.occurredAt) == [fixture.now + .seconds(10)])
            #expect(late.accepted?.activity.version == 3)
        }
    }

    @Test("the projection keeps every field of the activity through the database")
    func projectionRoundTrip() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpenPerDevice: 3))
        try await fixture.withStore { store in
            let stream = fixture.stream("rich")
            let now = fixture.now
            let command = Command.request(
                .init(
                    activityType: "score",
                    attributes: JSONObject([
                        "home": .string("Lyon"), "away": .string("Nantes"), "nested": .array([.null, .bool(true)]),
                    ]),
                    content: ActivityContent(
                        contentState: JSONObject(["score": .string("1-0"), "minute": .number(12.5)]),
                        staleDate: now + .seconds(1_800),
                        relevanceScore: RelevanceScore(42.25)
                    ),
                    startDate: now + .microseconds(123_457),
                    pushType: .channel,
                    style: .transient,
                    deviceID: DeviceID(rawValue: "phone-1"),
                    timestamp: now - .microseconds(3)
                )
            )
            let result = try await store.execute(command, on: stream, at: now)
            // Every field as decided, read back from the row.
            #expect(try await store.activity(stream) == result.accepted)
            try await store.execute(.registerPushToken("abc123"), on: stream, at: now + .seconds(1))
            try await store.execute(updateCommand(3, priority: .high), on: stream, at: now + .seconds(2))
            let decided = try await store.execute(updateCommand(4, priority: nil), on: stream, at: now + .seconds(3))
            #expect(result.accepted?.activity.state == .pending)
            #expect(result.accepted?.activity.content.relevanceScore == RelevanceScore(42.25))
            let stored = try await store.activity(stream)
            #expect(stored == decided.accepted)
            #expect(stored?.activity.recentHighPriorityUpdates.count == 2)
            // The scheduled start came due before the token was registered; updates cleared the stale date.
            #expect(stored?.activity.activatedAt == now + .microseconds(123_457))
            #expect(
                stored?.nextDeadline
                    == Deadline(kind: .lifetime, due: now + .microseconds(123_457) + .seconds(8 * 3600))
            )
            #expect(stored?.activity.pushToken == "abc123")
            #expect(stored?.activity.style == .transient)
        }
    }

    @Test("a rejection is returned and recorded with its details, and nothing is appended")
    func rejectionRecorded() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = fixture.stream("big")
            let result = try await store.execute(requestCommand(size: 5_000), on: stream, at: fixture.now)
            guard case .dataTooLarge(let size, 4096) = result.rejection else {
                Issue.record("expected data_too_large, got \(result)")
                return
            }
            #expect(try await store.activity(stream) == nil)
            #expect(try await store.events(of: stream).isEmpty)
            let recorded = try await store.rejections(of: fixture.app, limit: 10)
            #expect(recorded.map(\.code) == ["data_too_large"])
            #expect(recorded.first?.details["size"] == .number(JSONNumber(size)))
            #expect(recorded.first?.activity == "big")
            #expect(recorded.first?.command == "request")
        }
    }

    @Test("an unknown app is an error, not a rejection")
    func unknownApp() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = StreamID(app: AppID(rawValue: "nobody")!, activity: ActivityID(rawValue: "x")!)
            await #expect(throws: EventStoreError.unknownApp(stream.app)) {
                try await store.execute(requestCommand(), on: stream, at: fixture.now)
            }
        }
    }

    @Test("an expected version that is not the activity's is a version conflict")
    func expectedVersion() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = fixture.stream("v")
            try await store.execute(requestCommand(), on: stream, at: fixture.now, expectedVersion: 0)
            await #expect(throws: EventStoreError.versionConflict(expected: 0, actual: 1)) {
                try await store.execute(requestCommand(), on: stream, at: fixture.now, expectedVersion: 0)
            }
            await #expect(throws: EventStoreError.versionConflict(expected: 3, actual: 1)) {
                try await store.execute(updateCommand(2), on: stream, at: fixture.now, expectedVersion: 3)
            }
            let result = try await store.execute(updateCommand(2), on: stream, at: fixture.now, expectedVersion: 1)
            #expect(result.accepted?.activity.version == 2)
        }
    }

    @Test("a no-op appends nothing")
    func noOp() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = fixture.stream("n")
            try await store.execute(requestCommand(), on: stream, at: fixture.now)
            try await store.execute(.registerPushToken("t"), on: stream, at: fixture.now)
            let again = try await store.execute(.registerPushToken("t"), on: stream, at: fixture.now)
            #expect(again.appended.isEmpty)
            #expect(again.accepted?.activity.version == 2)
            #expect(try await store.events(of: stream).count == 2)
        }
    }

    @Test("a retry with the same idempotency key appends nothing and answers as the first time")
    func idempotentRetry() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = fixture.stream("i")
            let key = IdempotencyKey(key: "k-1", requestDigest: Array(repeating: 7, count: 32))
            let first = try await store.execute(requestCommand(), on: stream, at: fixture.now, idempotency: key)
            let retry = try await store.execute(
                requestCommand(),
                on: stream,
                at: fixture.now + .seconds(5),
                idempotency: key
            )
            #expect(!first.isReplay && retry.isReplay)
            #expect(retry.outcome == first.outcome)
            #expect(try await store.events(of: stream).count == 1)

            // Later commands do not change what the key answers.
            try await store.execute(updateCommand(2), on: stream, at: fixture.now + .seconds(6))
            let later = try await store.execute(
                requestCommand(),
                on: stream,
                at: fixture.now + .seconds(7),
                idempotency: key
            )
            #expect(later.outcome == first.outcome)

            let other = IdempotencyKey(key: "k-1", requestDigest: Array(repeating: 8, count: 32))
            await #expect(throws: EventStoreError.idempotencyKeyReused(key: "k-1")) {
                try await store.execute(requestCommand(), on: stream, at: fixture.now, idempotency: other)
            }
        }
    }

    @Test("a rejected command's key replays the rejection")
    func idempotentRejection() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = fixture.stream("r")
            let key = IdempotencyKey(key: "k-2", requestDigest: [1, 2, 3])
            let first = try await store.execute(
                requestCommand(size: 9_000),
                on: stream,
                at: fixture.now,
                idempotency: key
            )
            let retry = try await store.execute(
                requestCommand(size: 9_000),
                on: stream,
                at: fixture.now,
                idempotency: key
            )
            #expect(first.rejection?.code == "data_too_large")
            #expect(retry.outcome == first.outcome && retry.isReplay)
            #expect(try await store.rejections(of: fixture.app, limit: 10).count == 1)
        }
    }

    @Test("concurrent commands with one key: one is applied, the others get its outcome")
    func concurrentSameKey() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore(connections: 8) { store in
            let stream = fixture.stream("c")
            let key = IdempotencyKey(key: "k-3", requestDigest: [9])
            let results = try await withThrowingTaskGroup(of: CommandResult.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await store.execute(requestCommand(), on: stream, at: fixture.now, idempotency: key)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter { !$0.isReplay }.count == 1)
            #expect(Set(results.map(\.outcome)).count == 1)
            #expect(try await store.events(of: stream).count == 1)
        }
    }
}

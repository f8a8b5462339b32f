import ActivityLifecycle
import CanonicalJSON
import Postgres
import TestSupport
import Testing

@testable import EventStore

@Suite("Commands that arrive together commit together")
struct BatchTests {
    /// One activity's commands, in order: accepted, a version conflict, an idempotent replay, a
    /// reused key, an end, a rejection of what follows the end, and a request for an id taken.
    private static func script(_ stream: StreamID, _ now: Timestamp, _ store: EventStore) async -> [String] {
        let key = IdempotencyKey(key: "k-\(stream.activity)", requestDigest: [1])
        let steps: [(Command, Int?, IdempotencyKey?)] = [
            (requestCommand(), nil, nil),
            (updateCommand(2), 7, nil),
            (updateCommand(2), nil, nil),
            (updateCommand(3), nil, key),
            (updateCommand(3), nil, key),
            (updateCommand(4), nil, IdempotencyKey(key: key.key, requestDigest: [2])),
            (.end(.init(dismissal: .immediate)), 3, nil),
            (updateCommand(5), nil, nil),
            (requestCommand(), nil, nil),
        ]
        var answers: [String] = []
        for (second, (command, expectedVersion, idempotency)) in steps.enumerated() {
            answers.append(
                await answer {
                    try await store.execute(
                        command,
                        on: stream,
                        at: now + .seconds(second),
                        expectedVersion: expectedVersion,
                        idempotency: idempotency
                    )
                }
            )
        }
        return answers
    }

    /// What `command` answered, as `summary(of:)` says it, or the error it threw.
    private static func answer(_ command: () async throws -> CommandResult) async -> String {
        do {
            return summary(of: try await command())
        } catch {
            return "failed: \(error)"
        }
    }

    private static func summary(of result: CommandResult) -> String {
        let replay = result.isReplay ? "replayed " : ""
        switch result.outcome {
        case .accepted(let activity, let events):
            return "\(replay)accepted v\(activity.activity.version) \(events.map(\.event.type.rawValue))"
        case .rejected(let rejection):
            return "\(replay)rejected \(rejection)"
        }
    }

    /// Every event and recorded rejection of the database, by activity.
    private static func log(of fixture: StoreFixture) async throws -> [String: [String]] {
        try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                let events: [(String, String)] = try connection.query(
                    """
                    SELECT activity_id, version || ' ' || type || ' ' || data::text || ' ' || occurred_at
                    FROM events ORDER BY position
                    """
                ).map { (try $0.decode(0), try $0.decode(1)) }
                let rejections: [(String, String)] = try connection.query(
                    "SELECT activity_id, command || ' ' || code || ' ' || occurred_at FROM rejections ORDER BY id"
                ).map { (try $0.decode(0), try $0.decode(1)) }
                return Dictionary(grouping: events + rejections, by: \.0).mapValues { $0.map(\.1) }
            }
        }
    }

    /// Runs `commands` through `store`'s one writer as one batch: they queue, in this order, while
    /// the writer runs `waiting` and waits for its idempotency key (`name`), which `admin` holds;
    /// returns their answers, in order.
    private static func asOneBatch(
        _ commands: [(command: Command, stream: StreamID, expectedVersion: Int?)],
        named name: String,
        after waiting: (command: Command, stream: StreamID),
        _ fixture: StoreFixture,
        _ store: EventStore,
        _ admin: ConnectionPool
    ) async throws -> [String] {
        let (pids, held) = await DatabaseWaits.hold(
            [
                (
                    "key",
                    {
                        try $0.execute(
                            """
                            INSERT INTO idempotency_keys (app_id, idempotency_key, request_sha256, activity_id, outcome)
                            VALUES (\(fixture.app.rawValue), \(name), \([UInt8]([0])), 'held', '{}')
                            """
                        )
                    }
                )
            ],
            on: admin
        )
        let waited = Task {
            try await store.execute(
                waiting.command,
                on: waiting.stream,
                at: fixture.now,
                idempotency: IdempotencyKey(key: name, requestDigest: [1])
            )
        }
        _ = try await DatabaseWaits.writerWaitingForALock(admin)
        var answers: [Task<String, Never>] = []
        for (index, (command, stream, expectedVersion)) in commands.enumerated() {
            answers.append(
                Task {
                    await answer {
                        try await store.execute(command, on: stream, at: fixture.now, expectedVersion: expectedVersion)
                    }
                }
            )
            try await DatabaseWaits.waitUntil("the command queues") { store.commands.queuedCount == index + 1 }
        }
        try await DatabaseWaits.terminate(pids["key"]!, admin)
        await held.value
        #expect(try await waited.value.accepted != nil)
        var results: [String] = []
        for answer in answers { results.append(await answer.value) }
        return results
    }

    @Test("commands of many activities in shared batches get what each would have got alone, and write the same log")
    func batchedAsAlone() async throws {
        let activities = (0..<16).map { "mixed-\($0)" }
        let settings = AppSettings(bundleID: "b", maxOpen: 100)
        let alone = try await StoreFixture.make(settings: settings)
        var aloneAnswers: [String: [String]] = [:]
        try await alone.withStore(writers: 1) { store in
            for id in activities {
                aloneAnswers[id] = await Self.script(alone.stream(id), alone.now, store)
            }
        }

        let together = try await StoreFixture.make(settings: settings)
        let togetherAnswers = try await together.withStore(writers: 1) { store in
            await withTaskGroup(of: (String, [String]).self) { group in
                for id in activities {
                    group.addTask { (id, await Self.script(together.stream(id), together.now, store)) }
                }
                return await group.reduce(into: [String: [String]]()) { $0[$1.0] = $1.1 }
            }
        }

        #expect(togetherAnswers == aloneAnswers)
        #expect(try await Self.log(of: together) == Self.log(of: alone))
        let script = try #require(aloneAnswers[activities[0]])
        #expect(script.count == 9)
        #expect(script[0].hasPrefix("accepted v1"))
        #expect(script[1].contains("version conflict"))
        #expect(script[4].hasPrefix("replayed accepted v3"))
        #expect(script[5].contains("idempotency key"))
        #expect(script[7].hasPrefix("rejected"))
        #expect(script[8] == "rejected \(Rejection.activityExists)")

        // One writer ran 16 scripts side by side: its transactions held several activities each.
        let widest: Int = try await TestDatabase.withPool(together.database) { pool in
            try await pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT max(activities) FROM (
                        SELECT count(DISTINCT activity_id) AS activities FROM events GROUP BY transaction_id
                    ) AS batches
                    """
                ).single!.decode(0)
            }
        }
        #expect(widest > 1)
    }

    @Test("commands that queue while a batch is decided join it: they commit with it, in one transaction")
    func joiningABatchBeingDecided() async throws {
        let fixture = try await StoreFixture.make()
        let keyed = fixture.stream("keyed")
        let joining = ["joining-1", "joining-2"].map(fixture.stream)
        try await TestDatabase.withPool(fixture.database, maximumConnections: 2) { admin in
            try await fixture.withStore(writers: 1) { store in
                for stream in [keyed] + joining {
                    try await store.execute(requestCommand(), on: stream, at: fixture.now)
                }
                // The keyed update's load waits for a table it reads; the two updates queued
                // meanwhile are decided on what the store knows, and join its batch.
                let (pids, held) = await DatabaseWaits.hold(
                    [("limits", { try $0.execute("LOCK TABLE service_limits IN ACCESS EXCLUSIVE MODE") })],
                    on: admin
                )
                let first = Task {
                    try await store.execute(
                        updateCommand(2),
                        on: keyed,
                        at: fixture.now,
                        idempotency: IdempotencyKey(key: "k", requestDigest: [1])
                    )
                }
                try await DatabaseWaits.waitUntil("the keyed update's load waits") {
                    try await DatabaseWaits.lockWaiters(admin) == 1
                }
                let updates = joining.map { stream in
                    Task { try await store.execute(updateCommand(2), on: stream, at: fixture.now) }
                }
                try await DatabaseWaits.waitUntil("the updates queue") { store.commands.queuedCount == 2 }
                try await DatabaseWaits.terminate(pids["limits"]!, admin)
                await held.value
                #expect(try await first.value.accepted?.activity.version == 2)
                for update in updates {
                    #expect(try await update.value.accepted?.activity.version == 2)
                }
            }
            let transactions: Int = try await admin.withConnection { connection in
                try connection.query("SELECT count(DISTINCT transaction_id)::integer FROM events WHERE version = 2")
                    .single!.decode(0)
            }
            #expect(transactions == 1)
        }
    }

    @Test(
        "openings of one batch that all fit are accepted together; when a device's cap or the global stripes stop that, each is decided in order; every count stays exact"
    )
    func openingsOfOneBatch() async throws {
        let fixture = try await StoreFixture.make(
            settings: AppSettings(bundleID: "b", maxOpen: 100, maxOpenPerDevice: 3)
        )
        try await TestDatabase.withPool(fixture.database, maximumConnections: 2) { admin in
            try await fixture.withStore(writers: 1) { store in
                func openTogether(_ name: String, on devices: [String]) async throws -> [String] {
                    try await Self.asOneBatch(
                        devices.enumerated().map { (requestCommand(device: $1), fixture.stream("\(name)-\($0)"), nil) },
                        named: name,
                        after: (requestCommand(), fixture.stream("\(name)-waiting")),
                        fixture,
                        store,
                        admin
                    )
                }

                let accepted = "accepted v1 [\"activity.requested\"]"
                let fitting = try await openTogether(
                    "fits",
                    on: ["phone-a", "phone-a", "phone-b", "phone-b", "phone-c", "phone-c"]
                )
                #expect(fitting == Array(repeating: accepted, count: 6))
                let overrunning = try await openTogether(
                    "overruns",
                    on: ["phone-a", "phone-a", "phone-c", "phone-d", "phone-a"]
                )
                let full = Rejection.deviceMaximumExceeded(deviceID: DeviceID(rawValue: "phone-a")!, limit: 3, count: 3)
                #expect(overrunning == [accepted, "rejected \(full)", accepted, accepted, "rejected \(full)"])
                // Two per global stripe: none has room for three openings, which then take one
                // stripe after another.
                try await store.setGlobalMaxOpen(32, by: .commandLine)
                let spread = try await openTogether("spread", on: ["phone-d", "phone-e", "phone-e"])
                #expect(spread == Array(repeating: accepted, count: 3))
            }
            let (transactions, counts): ([Int], [String]) = try await admin.withConnection { connection in
                (
                    try connection.query(
                        """
                        SELECT count(*)::integer FROM events
                        WHERE activity_id LIKE '%-_' GROUP BY transaction_id ORDER BY min(position)
                        """
                    ).map { try $0.decode(0) },
                    try connection.query(
                        """
                        SELECT 'activities ' || count(*) FROM activities
                        UNION ALL SELECT 'app ' || sum(open) FROM app_open_stripes
                        UNION ALL SELECT 'global ' || sum(open) FROM global_open_stripes
                        UNION ALL (SELECT device_id || ' ' || open FROM device_open_counts ORDER BY device_id)
                        """
                    ).map { try $0.decode(0) }
                )
            }
            // Each batch's openings committed in one transaction.
            #expect(transactions == [6, 3, 3])
            #expect(
                counts == [
                    "activities 15", "app 15", "global 15", "phone-a 3", "phone-b 2", "phone-c 3", "phone-d 2",
                    "phone-e 2",
                ]
            )
        }
    }

    @Test(
        "closings of one batch free their stripes and devices and retire a lowered cap's excess first, exactly as one after the other would; a refused one frees nothing"
    )
    func closingsOfOneBatch() async throws {
        let fixture = try await StoreFixture.make(
            settings: AppSettings(bundleID: "b", maxOpen: 16, maxOpenPerDevice: 8)
        )
        try await TestDatabase.withPool(fixture.database, maximumConnections: 2) { admin in
            try await fixture.withStore(writers: 1) { store in
                try await store.setGlobalMaxOpen(16, by: .commandLine)
                for index in 0..<12 {
                    let stream = fixture.stream("c\(index)")
                    let opened = try await store.execute(
                        requestCommand(device: "phone-\(index % 3)"),
                        on: stream,
                        at: fixture.now
                    )
                    #expect(opened.accepted != nil)
                }
                // 12 open: 4 above the app's new cap, 2 above the service's.
                try await store.updateApp(
                    fixture.app,
                    AppSettings(bundleID: "b", maxOpen: 8, maxOpenPerDevice: 8),
                    by: .commandLine
                )
                try await store.setGlobalMaxOpen(10, by: .commandLine)
                let (before, holders) = try await admin.withConnection { try CapCounts.read($0) }
                #expect(before.appExcess[fixture.app.rawValue] == 4 && before.serviceExcess == 2)

                let end = Command.end(.init(dismissal: .immediate))
                let closing = ["c0", "c1", "c2", "c3", "c4", "c5"]
                let answers = try await Self.asOneBatch(
                    [
                        (end, fixture.stream("c0"), nil), (updateCommand(2), fixture.stream("c6"), nil),
                        (end, fixture.stream("c1"), nil), (end, fixture.stream("c7"), 5),
                        (end, fixture.stream("c2"), nil), (end, fixture.stream("c3"), nil),
                        (end, fixture.stream("c4"), nil), (end, fixture.stream("c5"), nil),
                    ],
                    named: "closes",
                    after: (updateCommand(2), fixture.stream("c11")),
                    fixture,
                    store,
                    admin
                )
                let closed = "accepted v3 [\"activity.ended\", \"activity.dismissed\"]"
                let conflict = "failed: \(EventStoreError.versionConflict(expected: 5, actual: 1))"
                #expect(
                    answers == [
                        closed, "accepted v2 [\"activity.updated\"]", closed, conflict, closed, closed, closed, closed,
                    ]
                )

                // As closings one after the other, in command order, would leave them.
                var expected = before
                for activity in closing { expected.close(holders[activity]!) }
                #expect(try await admin.withConnection { try CapCounts.read($0).counts } == expected)
                let transactions: Int = try await admin.withConnection { connection in
                    try connection.query(
                        "SELECT count(DISTINCT transaction_id) FROM events WHERE version > 1 AND activity_id <> 'c11'"
                    ).single!.decode(0)
                }
                #expect(transactions == 1)
            }
        }
    }

    @Test(
        "batches that open, update and close update every row they lock in the transaction that locked it: no version of a stripe, a device's count or an activity carries a multixact"
    )
    func noMultixacts() async throws {
        let fixture = try await StoreFixture.make(
            settings: AppSettings(bundleID: "b", maxOpen: 1_000, maxOpenPerDevice: 100)
        )
        try await fixture.withStore(connections: 4, writers: 2) { store in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<64 {
                    group.addTask {
                        let stream = fixture.stream("m\(index)")
                        _ = try await store.execute(
                            requestCommand(device: "phone-\(index % 4)"),
                            on: stream,
                            at: fixture.now
                        )
                        _ = try await store.execute(updateCommand(2), on: stream, at: fixture.now)
                        _ = try await store.execute(.end(.init(dismissal: .immediate)), on: stream, at: fixture.now)
                    }
                }
                try await group.waitForAll()
            }
        }
        let (batched, multixacts): (Int, [String]) = try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                try connection.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
                let batched: Int = try connection.query(
                    """
                    SELECT count(*) FROM (SELECT transaction_id FROM events GROUP BY transaction_id
                        HAVING count(*) FILTER (WHERE type = 'activity.ended') > 0 AND count(*) > 1) AS b
                    """
                ).single!.decode(0)
                // Every row version on every page, the dead ones too (`xmax` of a multixact has
                // the flag HEAP_XMAX_IS_MULTI, 0x1000, in its infomask).
                let multixacts: [String] = try connection.query(
                    """
                    SELECT t.name || ' ' || count(*) FROM unnest(ARRAY['app_open_stripes', 'global_open_stripes',
                            'device_open_counts', 'activities']) AS t(name),
                        generate_series(0, pg_relation_size(t.name::regclass) / current_setting('block_size')::bigint - 1)
                            AS p(page),
                        heap_page_items(get_raw_page(t.name, p.page::integer)) AS h
                    WHERE h.t_infomask & 4096 <> 0
                    GROUP BY t.name ORDER BY t.name
                    """
                ).map { try $0.decode(0) }
                return (batched, multixacts)
            }
        }
        // Closings went in batches with other commands.
        #expect(batched > 0)
        #expect(multixacts == [])
    }

    @Test("a cap race through batches admits exactly the cap and records each refusal once, retries replayed")
    func capRaceThroughBatches() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 10))
        // Every request is sent twice at once with one idempotency key, through two stores.
        let results = try await fixture.withStore(connections: 8, writers: 2) { first in
            try await fixture.withStore(connections: 8, writers: 2) { second in
                try await withThrowingTaskGroup(of: (Int, CommandResult).self) { group in
                    for index in 0..<200 {
                        let store = index.isMultiple(of: 2) ? first : second
                        let id = index / 2
                        let key = IdempotencyKey(key: "open-\(id)", requestDigest: [1])
                        group.addTask {
                            let result = try await store.execute(
                                requestCommand(),
                                on: fixture.stream("capped-\(id)"),
                                at: fixture.now,
                                idempotency: key
                            )
                            return (id, result)
                        }
                    }
                    return try await group.reduce(into: [Int: [CommandResult]]()) { $0[$1.0, default: []].append($1.1) }
                }
            }
        }
        #expect(results.values.allSatisfy { $0.count == 2 && $0[0].outcome == $0[1].outcome })
        #expect(results.values.allSatisfy { $0.filter(\.isReplay).count == 1 })
        #expect(results.values.filter { $0[0].accepted != nil }.count == 10)
        #expect(results.values.filter { $0[0].rejection?.code == "target_maximum_exceeded" }.count == 90)

        let (open, rejections, deadlocks): (Int, Int, Int) = try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                (
                    try connection.query("SELECT count(*) FROM activities WHERE state = 'active'").single!.decode(0),
                    try connection.query("SELECT count(*) FROM rejections").single!.decode(0),
                    // The stores' connections are closed: what they counted has been reported.
                    try connection.query(
                        "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
                    ).single!.decode(0)
                )
            }
        }
        #expect(open == 10)
        #expect(rejections == 90)
        // Batches that create the same activities and keys wait for each other, never in a cycle.
        #expect(deadlocks == 0)
    }

    @Test("a connection killed mid-batch acknowledges none of the batch, keeps what committed, and the writer goes on")
    func connectionKilledMidBatch() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 100))
        let activities = (0..<6).map { fixture.stream("killed-\($0)") }
        let blocker = fixture.stream("blocker")
        try await TestDatabase.withPool(fixture.database, maximumConnections: 3) { admin in
            try await fixture.withStore(writers: 1) { store in
                for stream in activities + [blocker] {
                    try await store.execute(requestCommand(), on: stream, at: fixture.now)
                }
                // Two transactions lock rows of the activities, so that the writer's batches wait
                // in their append: one locks the blocker, the other the six activities.
                let (lockerPIDs, lockers) = await DatabaseWaits.hold(
                    [("blocker", [blocker]), ("activities", activities)].map { name, streams in
                        let ids = PostgresArray(streams.map(\.activity.rawValue))
                        return (
                            name,
                            { try $0.execute("SELECT FROM activities WHERE activity_id = ANY (\(ids)) FOR UPDATE") }
                        )
                    },
                    on: admin
                )

                // The writer's first batch (the blocker's update) waits for its row; six
                // updates queue behind it and go together in the next batch.
                let blockerUpdate = Task { try await store.execute(updateCommand(2), on: blocker, at: fixture.now) }
                _ = try await DatabaseWaits.writerWaitingForALock(admin)
                let updates = activities.map { stream in
                    Task { try await store.execute(updateCommand(2), on: stream, at: fixture.now) }
                }
                try await DatabaseWaits.waitUntil("the updates queue") {
                    store.commands.queuedCount == activities.count
                }
                try await DatabaseWaits.terminate(lockerPIDs["blocker"]!, admin)
                #expect(try await blockerUpdate.value.accepted?.activity.version == 2)

                // The six wait in one batch; its connection is killed.
                let writer = try await DatabaseWaits.writerWaitingForALock(admin)
                try await DatabaseWaits.terminate(writer, admin)
                for update in updates {
                    await #expect(throws: EventStoreError.self) { try await update.value }
                }
                try await DatabaseWaits.terminate(lockerPIDs["activities"]!, admin)
                await lockers.value

                for stream in activities {
                    #expect(try await store.events(of: stream).map(\.event.version) == [1])
                }
                #expect(try await store.events(of: blocker).map(\.event.version) == [1, 2])
                // The writer goes on, on a new connection.
                for stream in activities {
                    #expect(
                        try await store.execute(updateCommand(2), on: stream, at: fixture.now).accepted?.activity
                            .version == 2
                    )
                }
            }
        }
    }

    @Test(
        "two processes' batches race updates under one idempotency key: one is applied, the others told the key is reused, the rest of each batch commits"
    )
    func sharedKeyAcrossProcesses() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 100))
        let keyed = (0..<16).map { fixture.stream("keyed-\($0)") }
        let plain = (0..<16).map { fixture.stream("plain-\($0)") }
        let results = try await fixture.withStore(connections: 4, writers: 2) { first in
            try await fixture.withStore(connections: 4, writers: 2) { second in
                for stream in keyed + plain {
                    try await first.execute(requestCommand(), on: stream, at: fixture.now)
                }
                return await withTaskGroup(of: (String, String).self) { group in
                    for (index, (keyedStream, plainStream)) in zip(keyed, plain).enumerated() {
                        let store = index.isMultiple(of: 2) ? first : second
                        let key = IdempotencyKey(key: "shared", requestDigest: [UInt8(index)])
                        group.addTask {
                            (
                                "keyed",
                                await Self.answer {
                                    try await store.execute(
                                        updateCommand(2),
                                        on: keyedStream,
                                        at: fixture.now,
                                        idempotency: key
                                    )
                                }
                            )
                        }
                        group.addTask {
                            (
                                "plain",
                                await Self.answer {
                                    try await store.execute(updateCommand(2), on: plainStream, at: fixture.now)
                                }
                            )
                        }
                    }
                    return await group.reduce(into: [String: [String]]()) { $0[$1.0, default: []].append($1.1) }
                }
            }
        }
        let keyedAnswers = try #require(results["keyed"])
        #expect(keyedAnswers.filter { $0.hasPrefix("accepted v2") }.count == 1)
        #expect(
            keyedAnswers.filter { $0 == "failed: \(EventStoreError.idempotencyKeyReused(key: "shared"))" }.count == 15
        )
        #expect(try #require(results["plain"]).allSatisfy { $0.hasPrefix("accepted v2") })
        try await fixture.withStore { store in
            var updated = 0
            for stream in keyed {
                updated += try await store.events(of: stream).count - 1
            }
            #expect(updated == 1)
            for stream in plain {
                #expect(try await store.events(of: stream).map(\.event.version) == [1, 2])
            }
        }
    }

    @Test(
        "two processes' batches open the same activities: each opens once, the other request is told it exists, and every count stays exact"
    )
    func openingsRaceAcrossProcesses() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 1_000))
        let ids = 0..<64
        let results = try await fixture.withStore(connections: 4, writers: 2) { first in
            try await fixture.withStore(connections: 4, writers: 2) { second in
                try await withThrowingTaskGroup(of: (Int, CommandResult).self) { group in
                    for id in ids {
                        for store in [first, second] {
                            group.addTask {
                                let result = try await store.execute(
                                    requestCommand(device: "phone-\(id % 4)"),
                                    on: fixture.stream("same-\(id)"),
                                    at: fixture.now
                                )
                                return (id, result)
                            }
                        }
                    }
                    return try await group.reduce(into: [Int: [CommandResult]]()) { $0[$1.0, default: []].append($1.1) }
                }
            }
        }
        #expect(results.count == ids.count)
        for answers in results.values {
            #expect(answers.compactMap(\.accepted).count == 1)
            #expect(answers.compactMap(\.rejection) == [.activityExists])
        }
        let counts: [Int] = try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT (SELECT count(*) FROM activities WHERE state = 'active')
                    UNION ALL SELECT sum(open) FROM app_open_stripes
                    UNION ALL SELECT sum(open) FROM global_open_stripes
                    UNION ALL (SELECT open FROM device_open_counts ORDER BY device_id)
                    """
                ).map { try $0.decode(0) }
            }
        }
        #expect(counts == [64, 64, 64, 16, 16, 16, 16])
    }

    @Test(
        "a batch that opens an activity another process's lone opening creates meanwhile decides again: that request is told the activity exists, the rest of the batch commits"
    )
    func openingRacedByALoneOpening() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 100))
        let raced = fixture.stream("raced")
        let other = fixture.stream("other")
        let blocker = fixture.stream("blocker")
        try await TestDatabase.withPool(fixture.database, maximumConnections: 4) { admin in
            try await fixture.withStore(writers: 1) { lone in
                try await fixture.withStore(writers: 1) { batching in
                    // Two transactions hold idempotency keys that two requests record: each of those
                    // appends creates its activity, then waits for its key.
                    let (holderPIDs, holders) = await DatabaseWaits.hold(
                        ["lone", "blocker"].map { key in
                            (
                                key,
                                {
                                    try $0.execute(
                                        """
                                        INSERT INTO idempotency_keys (app_id, idempotency_key, request_sha256, activity_id, outcome)
                                        VALUES (\(fixture.app.rawValue), \(key), \([UInt8]([0])), 'held', '{}')
                                        """
                                    )
                                }
                            )
                        },
                        on: admin
                    )

                    /// A request of `stream` through `store`, under a key a transaction holds.
                    func requestUnderHeldKey(
                        _ stream: StreamID,
                        _ store: EventStore,
                        _ key: String
                    ) -> Task<
                        CommandResult, any Error
                    > {
                        Task {
                            try await store.execute(
                                requestCommand(),
                                on: stream,
                                at: fixture.now,
                                idempotency: IdempotencyKey(key: key, requestDigest: [1])
                            )
                        }
                    }
                    // One store's lone opening of `raced` has created it, uncommitted.
                    let loneRequest = requestUnderHeldKey(raced, lone, "lone")
                    _ = try await DatabaseWaits.writerWaitingForALock(admin)
                    // The other store's writer waits likewise, while requests of `raced` and
                    // `other` queue behind it; they go together in its next batch.
                    let blockerRequest = requestUnderHeldKey(blocker, batching, "blocker")
                    try await DatabaseWaits.waitUntil("both writers wait") {
                        try await DatabaseWaits.lockWaiters(admin) == 2
                    }
                    let requests = [raced, other].map { stream in
                        Task { try await batching.execute(requestCommand(), on: stream, at: fixture.now) }
                    }
                    try await DatabaseWaits.waitUntil("the requests queue") { batching.commands.queuedCount == 2 }
                    try await DatabaseWaits.terminate(holderPIDs["blocker"]!, admin)
                    #expect(try await blockerRequest.value.accepted?.activity.version == 1)

                    // The batch waits for the row of `raced` that the lone opening created; then
                    // that one commits.
                    try await DatabaseWaits.waitUntil("the batch waits") {
                        try await DatabaseWaits.lockWaiters(admin) == 2
                    }
                    try await DatabaseWaits.terminate(holderPIDs["lone"]!, admin)
                    #expect(try await loneRequest.value.accepted?.activity.version == 1)
                    #expect(try await requests[0].value.rejection == .activityExists)
                    #expect(try await requests[1].value.accepted?.activity.version == 1)
                    await holders.value
                }
            }
        }
        let counts: [Int] = try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT (SELECT count(*) FROM activities)
                    UNION ALL SELECT sum(open) FROM app_open_stripes
                    UNION ALL SELECT sum(open) FROM global_open_stripes
                    """
                ).map { try $0.decode(0) }
            }
        }
        #expect(counts == [3, 3, 3])
    }
}

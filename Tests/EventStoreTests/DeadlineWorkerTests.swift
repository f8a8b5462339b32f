import ActivityLifecycle
import CanonicalJSON
import EventStore
import MetricsTestKit
import Postgres
import TestSupport
import Testing

@Suite("Deadlines applied by the store and the worker")
struct DeadlineWorkerTests {
    private func types(_ events: [StoredEvent]) -> [EventType] { events.map(\.event.type) }

    @Test("each kind of deadline is applied once, at its due time, with the right event")
    func eachKindOnce() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = fixture.stream("scheduled")
            let t = fixture.now
            let start = t + .seconds(60)
            let request = Command.request(
                .init(
                    activityType: "d",
                    content: ActivityContent(contentState: .empty, staleDate: start + .seconds(60)),
                    startDate: start
                )
            )
            try await store.execute(request, on: stream, at: t)
            #expect(try await store.applyDueDeadlines(at: start - .microseconds(1), limit: 10).isEmpty)

            let started = try await store.applyDueDeadlines(at: start + .seconds(30), limit: 10)
            #expect(types(started) == [.started])
            #expect(started.first?.event.occurredAt == start)
            #expect(try await store.applyDueDeadlines(at: start + .seconds(30), limit: 10).isEmpty)

            let stale = try await store.applyDueDeadlines(at: start + .seconds(90), limit: 10)
            #expect(types(stale) == [.becameStale])
            #expect(stale.first?.event.occurredAt == start + .seconds(60))

            let lifetime = try await store.applyDueDeadlines(at: start + .seconds(8 * 3600), limit: 10)
            #expect(types(lifetime) == [.ended])
            #expect(lifetime.first?.event.occurredAt == start + .seconds(8 * 3600))

            let dismissed = try await store.applyDueDeadlines(at: start + .seconds(12 * 3600 + 5), limit: 10)
            #expect(types(dismissed) == [.dismissed])
            #expect(dismissed.first?.event.occurredAt == start + .seconds(12 * 3600))
            #expect(try await store.activity(stream)?.nextDeadline == nil)
            #expect(try await store.earliestDeadline() == nil)
            let counts = try await store.openCounts(of: fixture.app)
            #expect(counts.app == 0 && counts.global == 0)
        }
    }

    @Test("after downtime, every due deadline of an activity is applied in order with its own due time")
    func catchUp() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = fixture.stream("late")
            let start = fixture.now + .seconds(10)
            let request = Command.request(
                .init(
                    activityType: "d",
                    content: ActivityContent(contentState: .empty, staleDate: start + .seconds(60)),
                    startDate: start
                )
            )
            try await store.execute(request, on: stream, at: fixture.now)
            let events = try await store.applyDueDeadlines(at: fixture.now + .seconds(48 * 3600), limit: 10)
            #expect(types(events) == [.started, .becameStale, .ended, .dismissed])
            #expect(
                events.map(\.event.occurredAt) == [
                    start, start + .seconds(60), start + .seconds(8 * 3600), start + .seconds(12 * 3600),
                ]
            )
            #expect(events.map(\.event.version) == [2, 3, 4, 5])
        }
    }

    @Test("an update that moved the stale date cancels the old stale deadline")
    func movedStaleDate() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = fixture.stream("moved")
            let t = fixture.now
            try await store.execute(requestCommand(staleDate: t + .seconds(60)), on: stream, at: t)
            try await store.execute(
                .update(
                    .init(content: ActivityContent(contentState: .empty, staleDate: t + .seconds(600)), priority: .low)
                ),
                on: stream,
                at: t + .seconds(30)
            )
            #expect(try await store.applyDueDeadlines(at: t + .seconds(300), limit: 10).isEmpty)
            let stale = try await store.applyDueDeadlines(at: t + .seconds(601), limit: 10)
            #expect(stale.map(\.event.occurredAt) == [t + .seconds(600)])
        }
    }

    @Test("an update racing a due stale deadline: the stale transition is recorded once, before the update")
    func updateRacingStaleDeadline() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 1_000))
        let t = fixture.now
        try await fixture.withStore(connections: 8) { store in
            // Rounds, since one race meets the worker mid-claim only now and then.
            for round in 0..<4 {
                let streams = (0..<40).map { fixture.stream("race\(round)-\($0)") }
                for stream in streams {
                    try await store.execute(requestCommand(staleDate: t + .seconds(60)), on: stream, at: t)
                }
                let later = t + .seconds(120)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        while try await !store.applyDueDeadlines(at: later, limit: 3).isEmpty {}
                    }
                    for stream in streams {
                        group.addTask {
                            // A conflict means the worker appended first: decide again on the new state.
                            for _ in 0..<5 {
                                do {
                                    try await store.execute(updateCommand(2), on: stream, at: later)
                                    return
                                } catch EventStoreError.versionConflict {
                                    continue
                                }
                            }
                            Issue.record("the update kept conflicting")
                        }
                    }
                    try await group.waitForAll()
                }
                for stream in streams {
                    let events = try await store.events(of: stream)
                    #expect(types(events) == [.requested, .becameStale, .updated], "\(stream)")
                    #expect(events.map(\.event.version) == [1, 2, 3])
                    #expect(events[1].event.occurredAt == t + .seconds(60))
                }
            }
        }
    }

    @Test("two workers over one database apply each deadline exactly once")
    func twoWorkersExactlyOnce() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 1_000))
        let start = fixture.now + .seconds(5)
        try await fixture.withStore(connections: 8) { store in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<300 {
                    group.addTask {
                        let request = Command.request(
                            .init(activityType: "d", content: ActivityContent(contentState: .empty), startDate: start)
                        )
                        try await store.execute(request, on: fixture.stream("s\(index)"), at: fixture.now)
                    }
                }
                try await group.waitForAll()
            }
        }
        let applied = try await fixture.withStore(connections: 4) { first in
            try await fixture.withStore(connections: 4) { second in
                try await withThrowingTaskGroup(of: [StoredEvent].self) { group in
                    for store in [first, second, first, second] {
                        group.addTask {
                            var all: [StoredEvent] = []
                            while true {
                                let batch = try await store.applyDueDeadlines(at: start + .seconds(1), limit: 25)
                                if batch.isEmpty { return all }
                                all += batch
                            }
                        }
                    }
                    return try await group.reduce(into: []) { $0 += $1 }
                }
            }
        }
        #expect(applied.count == 300)
        #expect(Set(applied.map(\.stream)).count == 300)
        let stored = try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                try connection.query("SELECT count(*) FROM events WHERE type = 'activity.started'").single!.decode(
                    0,
                    as: Int.self
                )
            }
        }
        #expect(stored == 300)
    }

    @Test("lifetime ends racing batches of openings and ends in the same app never wait for each other in a cycle")
    func lifetimeEndsRaceBatchesWithoutDeadlock() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 10_000))
        // Activities on every stripe, all due to reach their lifetime at once.
        try await fixture.withStore(connections: 8) { store in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<600 {
                    group.addTask {
                        try await store.execute(
                            requestCommand(device: "d\(index % 40)"),
                            on: fixture.stream("old-\(index)"),
                            at: fixture.now
                        )
                    }
                }
                try await group.waitForAll()
            }
        }
        let later = fixture.now + .seconds(9 * 3600)
        try await fixture.withStore(connections: 8, writers: 2) { commands in
            try await fixture.withStore(connections: 6) { deadlines in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 {
                        group.addTask {
                            while try await !deadlines.applyDueDeadlines(at: later, limit: 25).isEmpty {}
                        }
                    }
                    // Meanwhile the app opens new activities and ends others, in batches.
                    for index in 0..<300 {
                        group.addTask {
                            try await commands.execute(
                                requestCommand(device: "d\(index % 40)"),
                                on: fixture.stream("new-\(index)"),
                                at: later
                            )
                            try await commands.execute(
                                .end(.init(dismissal: .immediate)),
                                on: fixture.stream("new-\(index)"),
                                at: later
                            )
                        }
                    }
                    try await group.waitForAll()
                }
            }
        }
        let (ended, deadlocks): (Int, Int) = try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                (
                    try connection.query(
                        "SELECT count(*) FROM activities WHERE activity_id LIKE 'old-%' AND state = 'ended'"
                    ).single!.decode(0),
                    // The stores' connections are closed: what they counted has been reported.
                    try connection.query(
                        "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()"
                    ).single!.decode(0)
                )
            }
        }
        #expect(ended == 600)
        #expect(deadlocks == 0)
    }

    @Test(
        "end to end with real time: start and stale 1 s ahead, dismissal after 2 s, each applied by the worker at its due time and not before"
    )
    func realTime() async throws {
        let fixture = try await StoreFixture.make()
        let listener = try fixture.makeListener()
        try await TestDatabase.withPool(fixture.database) { pool in
            let notifier = AppendNotifier(pool: pool)
            let store = EventStore(pool: pool, lifecycle: Lifecycle(), notifier: notifier)
            let metrics = TestMetrics()
            let worker = DeadlineWorker(store: store, listener: listener, logger: TestDatabase.logger, metrics: metrics)
            let stream = fixture.stream("live")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await listener.run() }
                group.addTask { try await notifier.run() }
                group.addTask { try await worker.run() }
                while !listener.isListening { try await Task.sleep(for: .milliseconds(10)) }

                let t = Timestamp.now()
                let request = Command.request(
                    .init(
                        activityType: "d",
                        content: ActivityContent(contentState: .empty, staleDate: t + .seconds(1)),
                        startDate: t + .seconds(1)
                    )
                )
                try await store.execute(request, on: stream, at: t)
                try await waitFor(store, stream) { $0.state == .stale }
                let endedAt = Timestamp.now()
                try await store.execute(.end(.init(dismissal: .after(endedAt + .seconds(2)))), on: stream, at: endedAt)
                try await waitFor(store, stream) { $0.state == .dismissed }
                // The worker counts what it applied, and times it last, once the append has
                // committed, which a reader can see first.
                for _ in 0..<200 where (try? metrics.expectTimer("liveline_deadline_lag_seconds").values.count) != 3 {
                    try await Task.sleep(for: .milliseconds(50))
                }
                group.cancelAll()

                let events = try await store.events(of: stream)
                #expect(types(events) == [.requested, .started, .becameStale, .ended, .dismissed])
                let system = events.filter { $0.event.cause == .system }
                #expect(system.map(\.event.occurredAt) == [t + .seconds(1), t + .seconds(1), endedAt + .seconds(2)])
                // Never before it was due. How soon after is a figure of scripts/benchmark-deadlines.sh
                // (BENCHMARKS.md), not of a test: on a loaded test machine it is the scheduler's.
                for event in system {
                    #expect(event.recordedAt >= event.event.occurredAt, "\(event.event.type) applied early")
                }
                // Metrics: applied deadlines by kind, and their lag.
                for kind in ["start", "stale", "dismissal"] {
                    #expect(
                        try metrics.expectCounter("liveline_deadlines_applied_total", [("kind", kind)]).totalValue == 1
                    )
                }
                #expect(try metrics.expectTimer("liveline_deadline_lag_seconds").values.count == 3)
            }
        }
    }

    private func waitFor(_ store: EventStore, _ stream: StreamID, _ condition: (Activity) -> Bool) async throws {
        for _ in 0..<200 {
            if let activity = try await store.activity(stream)?.activity, condition(activity) { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("condition not reached within 10 s")
    }
}

import ActivityLifecycle
import CanonicalJSON
import EventStore
import Postgres
import TestSupport
import Testing

@Suite("Live feed: appends wake waiting readers")
struct LiveFeedTests {
    @Test("a reader waiting for events gets those another process appends, woken by its notifier")
    func wakesAcrossProcesses() async throws {
        let fixture = try await StoreFixture.make()
        let listener = try fixture.makeListener()
        try await TestDatabase.withPool(fixture.database) { pool in
            let notifier = AppendNotifier(pool: pool)
            let writer = EventStore(pool: pool, lifecycle: Lifecycle(), notifier: notifier)
            try await fixture.withStore { reader in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await listener.run() }
                    group.addTask { try await notifier.run() }
                    while !listener.isListening { try await Task.sleep(for: .milliseconds(10)) }

                    // The notification itself: an append advances the channel's generation.
                    let generation = listener.generation
                    try await writer.execute(requestCommand(), on: fixture.stream("first"), at: fixture.now)
                    #expect(
                        await listener.wait(after: generation, timeout: .seconds(60))
                            > generation
                    )

                    // The feed: a reader that has seen everything waits, then gets the next append.
                    let seen = try await reader.events(
                        after: 0,
                        app: fixture.app,
                        limit: 10,
                        waitingUpTo: .seconds(30),
                        listener: listener
                    )
                    #expect(seen.count == 1)
                    async let next = reader.events(
                        after: seen.last!.position,
                        app: fixture.app,
                        limit: 10,
                        waitingUpTo: .seconds(30),
                        listener: listener
                    )
                    try await Task.sleep(for: .milliseconds(100))
                    try await writer.execute(updateCommand(2), on: fixture.stream("first"), at: fixture.now)
                    let events = try await next
                    #expect(events.map(\.event.type) == [.updated])
                    group.cancelAll()
                }
            }
        }
    }

    @Test("a reader with nothing to read gives up after its timeout with no events")
    func timesOut() async throws {
        let fixture = try await StoreFixture.make()
        let listener = try fixture.makeListener()
        try await fixture.withStore { store in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await listener.run() }
                let events = try await store.events(
                    after: 0,
                    limit: 10,
                    waitingUpTo: .milliseconds(300),
                    listener: listener
                )
                #expect(events.isEmpty)
                group.cancelAll()
            }
        }
    }

    @Test("a burst of appends is announced at most once per interval")
    func coalescesBursts() async throws {
        let fixture = try await StoreFixture.make()
        let listener = try fixture.makeListener()
        try await TestDatabase.withPool(fixture.database) { pool in
            let interval = Duration.milliseconds(100)
            let notifier = AppendNotifier(pool: pool, minimumInterval: interval)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await listener.run() }
                group.addTask { try await notifier.run() }

                // The session's first generation is its own (it advances on connecting): wait past it.
                let before = await listener.wait(after: 0, timeout: .seconds(30))
                let clock = ContinuousClock()
                let start = clock.now
                // The first append after a quiet spell is announced at once.
                notifier.eventsAppended()
                let first = await listener.wait(after: before, timeout: .seconds(30))
                #expect(first == before + 1)
                // Then an append every millisecond for half a second: one notification per interval.
                let burstStart = clock.now
                while burstStart.duration(to: clock.now) < .milliseconds(500) {
                    notifier.eventsAppended()
                    try await Task.sleep(for: .milliseconds(1))
                }
                let elapsed = start.duration(to: clock.now)
                // The burst is announced too, at the latest one interval after its last append
                // (waited for generously: a loaded machine may be slow to deliver it).
                await listener.wait(after: first, timeout: .seconds(30))
                try await Task.sleep(for: interval * 3)
                let notifications = listener.generation - before
                #expect(notifications >= 2)
                #expect(notifications <= UInt64(elapsed / interval) + 2)
                group.cancelAll()
            }
        }
    }
}

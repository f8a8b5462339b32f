import ActivityLifecycle
import CanonicalJSON
import EventStore
import Postgres
import TestSupport
import Testing

@Suite("Concurrent writers and readers")
struct ConcurrencyTests {
    @Test("racing updates of one activity: contiguous versions, every acknowledged update present, conflicts reported")
    func racingUpdates() async throws {
        let fixture = try await StoreFixture.make()
        let stream = fixture.stream("hot")
        try await fixture.withStore { try await $0.execute(requestCommand(), on: stream, at: fixture.now) }
        let results = try await fixture.withStore(connections: 8) { first in
            try await fixture.withStore(connections: 8) { second in
                try await withThrowingTaskGroup(of: (Int, Result<CommandResult, EventStoreError>).self) { group in
                    for step in 1...100 {
                        let store = step.isMultiple(of: 2) ? first : second
                        group.addTask {
                            do {
                                return (
                                    step,
                                    .success(try await store.execute(updateCommand(step), on: stream, at: fixture.now))
                                )
                            } catch let error as EventStoreError {
                                return (step, .failure(error))
                            }
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
        }
        let acknowledged = results.compactMap { step, result in (try? result.get())?.accepted.map { (step, $0) } }
        let conflicts = results.filter { if case .failure(.versionConflict) = $0.1 { true } else { false } }
        #expect(acknowledged.count + conflicts.count == 100)
        #expect(!acknowledged.isEmpty)

        let events = try await fixture.withStore { try await $0.events(of: stream) }
        #expect(events.map(\.event.version) == Array(1...events.count))
        #expect(events.count == 1 + acknowledged.count)
        // Each acknowledged update is in the stream exactly once, at the version it was told.
        for (step, activity) in acknowledged {
            let event = events[activity.activity.version - 1]
            guard case .updated(let updated) = event.event.payload else {
                Issue.record("version \(activity.activity.version) is not an update")
                continue
            }
            #expect(updated.content.contentState == JSONObject(["step": .number(JSONNumber(step))]))
        }
    }

    @Test("a reader paging the log while 8 writers append sees every event exactly once, in position order")
    func pagingReaderMissesNothing() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 10_000))
        let writers = 8
        let commandsPerWriter = 60
        let positions = try await fixture.withStore(connections: writers + 1) { store in
            try await withThrowingTaskGroup(of: [Int64].self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for index in 0..<commandsPerWriter {
                            let stream = fixture.stream("w\(writer)-\(index / 3)")
                            let command = index % 3 == 0 ? requestCommand() : updateCommand(index)
                            try await store.execute(command, on: stream, at: fixture.now)
                        }
                        return []
                    }
                }
                group.addTask {
                    // Reads while the writers write, until it has seen as many events as they
                    // append (or gives up after 120 s); transactions of other tests on the same
                    // cluster may hold the readable part back (the stable position is the cluster's).
                    var seen: [Int64] = []
                    var after: Int64 = 0
                    let giveUp = ContinuousClock.now + .seconds(120)
                    while seen.count < writers * commandsPerWriter, ContinuousClock.now < giveUp {
                        let page = try await store.events(after: after, app: fixture.app, limit: 7)
                        guard let last = page.last else {
                            try await Task.sleep(for: .milliseconds(5))
                            continue
                        }
                        seen += page.map(\.position)
                        after = last.position
                    }
                    return seen
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
        }
        let stored: [Int64] = try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                try connection.query("SELECT position FROM events ORDER BY position").map { try $0.decode(0) }
            }
        }
        #expect(stored.count == writers * commandsPerWriter)
        #expect(positions == stored)
    }

    @Test("events(after:) never returns a position it could later precede")
    func stablePositionHoldsBackInFlightTransactions() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { try await $0.execute(requestCommand(), on: fixture.stream("x"), at: fixture.now) }
        try await TestDatabase.withPool(fixture.database, maximumConnections: 2) { pool in
            // An open transaction that has written something holds the stable position back.
            let (written, holderHasWritten) = AsyncStream<Void>.makeStream()
            let readerIsDone = Flag()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await pool.withTransaction { connection in
                        try connection.execute("INSERT INTO apps (app_id, bundle_id) VALUES ('holder', 'h')")
                        holderHasWritten.yield()
                        // Open until the update below has committed and been read (however long a
                        // loaded machine takes; a minute at most).
                        for _ in 0..<1200 where !readerIsDone.isSet {
                            try connection.execute("SELECT pg_sleep(0.05)")
                        }
                    }
                }
                for await _ in written { break }
                defer { readerIsDone.set() }
                try await fixture.withStore { store in
                    try await store.execute(updateCommand(2), on: fixture.stream("x"), at: fixture.now)
                    let visible = try await store.events(after: 0, limit: 10)
                    #expect(visible.count <= 1, "the update committed after the open transaction began must wait")
                }
                readerIsDone.set()
                try await group.waitForAll()
            }
        }
        // Once it has finished, the update becomes readable.
        let all = try await fixture.withStore { store in
            var events = try await store.events(after: 0, limit: 10)
            for _ in 0..<100 where events.count < 2 {
                try await Task.sleep(for: .milliseconds(50))
                events = try await store.events(after: 0, limit: 10)
            }
            return events
        }
        #expect(all.map(\.event.version) == [1, 2])
    }
}

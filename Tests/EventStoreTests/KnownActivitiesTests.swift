import ActivityLifecycle
import CanonicalJSON
import Postgres
import TestSupport
import Testing

@testable import EventStore

@Suite("Commands decided on what the store knows, without a load")
struct KnownActivitiesTests {
    @Test("at most `capacity` activities are known: the first remembered is forgotten first, an update keeps its place")
    func capacity() throws {
        let known = KnownActivities(capacity: 3)
        let activities = try (1...4).map { try Self.activity("a\($0)") }
        known.remember(Array(activities[0..<3]), rules: [Self.app: Self.rules])
        // Remembered again, a1 keeps its place: it is still the first to go.
        known.remember([activities[0]], rules: [:])
        known.remember([activities[3]], rules: [:])
        #expect(known.count == 3)
        #expect(
            known.known(activities.map(\.stream), opening: [false, false, false, false]).map { $0?.activity?.stream }
                == [nil] + activities[1...].map(\.stream)
        )

        known.forget([activities[1].stream])
        #expect(known.known([activities[1].stream], opening: [false])[0] == nil)
        known.forgetRules(of: [Self.app])
        #expect(known.known([activities[2].stream], opening: [false])[0] == nil)
    }

    @Test(
        "an update of an activity the store wrote is decided without a load: it does not wait for a table only the load reads"
    )
    func skipsTheLoad() async throws {
        let fixture = try await StoreFixture.make()
        let stream = fixture.stream("known")
        try await TestDatabase.withPool(fixture.database, maximumConnections: 2) { admin in
            try await fixture.withStore { store in
                try await store.execute(requestCommand(), on: stream, at: fixture.now)
                // The request's load counts open activities; this update's load reads the app's rules.
                try await store.execute(updateCommand(2), on: stream, at: fixture.now + .seconds(1))
                let (pids, held) = await DatabaseWaits.hold(
                    [("limits", { try $0.execute("LOCK TABLE service_limits IN ACCESS EXCLUSIVE MODE") })],
                    on: admin
                )
                let known = try await store.execute(updateCommand(3), on: stream, at: fixture.now + .seconds(2))
                #expect(known.accepted?.activity.version == 3)
                // A command with an idempotency key loads its record, and so waits.
                let keyed = Task {
                    try await store.execute(
                        updateCommand(4),
                        on: stream,
                        at: fixture.now + .seconds(3),
                        idempotency: IdempotencyKey(key: "k", requestDigest: [1])
                    )
                }
                try await DatabaseWaits.waitUntil("the keyed update waits for the lock") {
                    try await DatabaseWaits.lockWaiters(admin) == 1
                }
                try await DatabaseWaits.terminate(pids["limits"]!, admin)
                await held.value
                #expect(try await keyed.value.accepted?.activity.version == 4)
            }
        }
    }

    @Test(
        "an opening in an app whose rules the store knows is decided without a load: it does not wait for a table only the load reads"
    )
    func openingSkipsTheLoad() async throws {
        let fixture = try await StoreFixture.make()
        try await TestDatabase.withPool(fixture.database, maximumConnections: 2) { admin in
            try await fixture.withStore { store in
                // The first opening loads the app's rules; the later ones know them.
                try await store.execute(requestCommand(device: "d"), on: fixture.stream("first"), at: fixture.now)
                let (pids, held) = await DatabaseWaits.hold(
                    [("limits", { try $0.execute("LOCK TABLE service_limits IN ACCESS EXCLUSIVE MODE") })],
                    on: admin
                )
                let opened = try await store.execute(
                    requestCommand(device: "d"),
                    on: fixture.stream("second"),
                    at: fixture.now + .seconds(1)
                )
                #expect(opened.accepted?.activity.version == 1)
                try await DatabaseWaits.terminate(pids["limits"]!, admin)
                await held.value
                #expect(try await store.openCounts(of: fixture.app).app == 2)
            }
        }
    }

    @Test(
        "an opening decided on known rules is answered as a load would answer it: an activity another process opened exists, a cap it filled refuses with its count, existence before the cap"
    )
    func openingAfterAnotherProcess() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 3))
        try await fixture.withStore { first in
            try await fixture.withStore { second in
                try await first.execute(requestCommand(), on: fixture.stream("one"), at: fixture.now)
                try await second.execute(requestCommand(), on: fixture.stream("two"), at: fixture.now)

                let exists = try await first.execute(requestCommand(), on: fixture.stream("two"), at: fixture.now)
                #expect(exists.rejection == .activityExists)

                try await second.execute(requestCommand(), on: fixture.stream("three"), at: fixture.now)
                // The app is at its cap: an opening of an existing activity is still told it exists
                // (the append alone would count the cap first), a new one that the cap is reached.
                let existsAtCap = try await first.execute(
                    requestCommand(),
                    on: fixture.stream("three"),
                    at: fixture.now
                )
                #expect(existsAtCap.rejection == .activityExists)
                let over = try await first.execute(requestCommand(), on: fixture.stream("four"), at: fixture.now)
                #expect(over.rejection == .targetMaximumExceeded(limit: 3, count: 3))

                // Each refusal recorded once.
                let recorded = try await first.rejections(of: fixture.app, limit: 10)
                #expect(
                    recorded.map(\.code).sorted() == ["activity_exists", "activity_exists", "target_maximum_exceeded"]
                )
                #expect(try await first.openCounts(of: fixture.app).app == 3)
            }
        }
    }

    @Test(
        "appends by another process since: a command is decided again on the activity as it is, If-Match answered by the real version"
    )
    func anotherProcessAppended() async throws {
        let fixture = try await StoreFixture.make()
        let stream = fixture.stream("shared")
        try await fixture.withStore { first in
            try await fixture.withStore { second in
                var now = fixture.now
                func next() -> Timestamp {
                    now = now + .seconds(1)
                    return now
                }
                try await first.execute(requestCommand(), on: stream, at: next())
                try await first.execute(updateCommand(2), on: stream, at: next())
                try await first.execute(updateCommand(3), on: stream, at: next())  // known: version 3
                try await second.execute(updateCommand(4), on: stream, at: next())  // version 4

                let unconditional = try await first.execute(updateCommand(5), on: stream, at: next())
                #expect(unconditional.accepted?.activity.version == 5)
                #expect(
                    unconditional.accepted?.activity.content.contentState
                        == JSONObject(["step": .number(JSONNumber(5))])
                )

                try await second.execute(updateCommand(6), on: stream, at: next())  // version 6
                // The real version, not the known one (5): accepted.
                let matching = try await first.execute(updateCommand(7), on: stream, at: next(), expectedVersion: 6)
                #expect(matching.accepted?.activity.version == 7)

                try await second.execute(updateCommand(8), on: stream, at: next())  // version 8
                // The known version, no longer the real one: refused with the real version.
                await #expect(throws: EventStoreError.versionConflict(expected: 7, actual: 8)) {
                    try await first.execute(updateCommand(9), on: stream, at: next(), expectedVersion: 7)
                }

                let events = try await first.events(of: stream)
                #expect(events.map(\.event.version) == Array(1...8))
                #expect(try await first.activity(stream) == (try await second.activity(stream)))
            }
        }
    }

    @Test(
        "a no-op on what is known is checked against the activity as it is: another process changed it, so it appends"
    )
    func noOpCheckedAgainstALoad() async throws {
        let fixture = try await StoreFixture.make()
        let stream = fixture.stream("token")
        try await fixture.withStore { first in
            try await fixture.withStore { second in
                try await first.execute(requestCommand(), on: stream, at: fixture.now)
                try await first.execute(.registerPushToken("aa"), on: stream, at: fixture.now + .seconds(1))
                try await first.execute(updateCommand(3), on: stream, at: fixture.now + .seconds(2))
                try await second.execute(.registerPushToken("bb"), on: stream, at: fixture.now + .seconds(3))
                // The known activity has token "aa": a no-op there, a change of the real one.
                let again = try await first.execute(.registerPushToken("aa"), on: stream, at: fixture.now + .seconds(4))
                #expect(again.appended.map(\.event.version) == [5])
                #expect(again.accepted?.activity.pushToken == "aa")
            }
        }
    }

    @Test("rules an admin changed in another process since they were read: the command is decided under the new ones")
    func rulesChanged() async throws {
        let settings = AppSettings(bundleID: "b", priorityBudgetPerHour: 5)
        let fixture = try await StoreFixture.make(settings: settings)
        let stream = fixture.stream("budget")
        try await fixture.withStore { first in
            try await fixture.withStore { second in
                try await first.execute(requestCommand(), on: stream, at: fixture.now)
                for step in 2...3 {
                    let result = try await first.execute(
                        updateCommand(step, priority: .high),
                        on: stream,
                        at: fixture.now + .seconds(step)
                    )
                    #expect(result.accepted != nil)
                }
                var lowered = settings
                lowered.priorityBudgetPerHour = 2
                try await second.updateApp(fixture.app, lowered, by: .commandLine)

                let over = try await first.execute(
                    updateCommand(4, priority: .high),
                    on: stream,
                    at: fixture.now + .seconds(4)
                )
                guard case .pushBudgetExhausted(let budget, _) = over.rejection else {
                    Issue.record("expected the lowered budget to refuse the update, got \(over.outcome)")
                    return
                }
                #expect(budget == 2)
            }
        }
    }

    private static let app = AppID(rawValue: "com.example.known")!

    private static let rules = KnownActivities.Rules(
        context: DecisionContext(
            app: AppRules(maxOpen: 5, maxOpenPerDevice: nil, priorityBudgetPerHour: 10),
            globalMaxOpen: 100,
            open: OpenCounts(app: 0, global: 0, device: 0)
        ),
        version: 1
    )

    /// An activity of `Self.app`, as requesting it leaves it.
    private static func activity(_ id: String) throws -> StoredActivity {
        let lifecycle = Lifecycle()
        let now = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)
        let events = try lifecycle.decide(requestCommand(), for: nil, at: now, context: rules.context)
        let activity = try #require(try events.reduce(nil) { try lifecycle.evolve($0, with: $1) })
        return StoredActivity(
            stream: StreamID(app: app, activity: ActivityID(rawValue: id)!),
            activity: activity,
            nextDeadline: lifecycle.nextDeadline(of: activity)
        )
    }
}

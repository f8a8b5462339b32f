import ActivityLifecycle
import CanonicalJSON
import Testing

@Suite("Unconfirmed starts: a remote start whose device never reported the activity's push token")
struct UnconfirmedStartRuleTests {
    static let window = LifecyclePolicy.standard.startConfirmationWindow

    /// A remote-started activity, the start accepted by APNs a second after the request.
    static func started() throws -> (Timeline, accepted: Timestamp) {
        var timeline = Timeline()
        try timeline.send(RemoteStartRuleTests.request(token: "aa01"))
        return (timeline, timeline.now + .seconds(1))
    }

    static func flag(accepted: Timestamp, inARow: Int = 1, suspect: Bool = false) -> Command {
        .flagUnconfirmedStart(
            UnconfirmedStart(
                pushToStartToken: "aa01",
                acceptedAt: accepted,
                tokenDueBy: accepted + window,
                unconfirmedInARow: inARow,
                tokenSuspect: suspect
            )
        )
    }

    @Test("once the window ran out it is recorded at its due time, by the system, and the state does not change")
    func recorded() throws {
        var (timeline, accepted) = try Self.started()
        timeline.advance(Self.window + .seconds(30))
        let events = try timeline.send(Self.flag(accepted: accepted, inARow: 3, suspect: true))
        #expect(events.map(\.type) == [.startUnconfirmed])
        #expect(events.first?.occurredAt == accepted + Self.window)
        #expect(events.first?.cause == .system)
        #expect(timeline.state == .active && timeline.activity?.version == 2)
        guard case .startUnconfirmed(let flag) = events.first?.payload else { return }
        #expect(flag.unconfirmedInARow == 3 && flag.tokenSuspect)
    }

    @Test("before the window runs out it is not due")
    func notDue() throws {
        var (timeline, accepted) = try Self.started()
        timeline.advance(Self.window - .seconds(1))
        #expect(
            timeline.rejection(of: Self.flag(accepted: accepted))
                == .notDue(
                    command: "flag unconfirmed start",
                    dueAt: accepted + Self.window
                )
        )
    }

    @Test("a deadline that came due first is applied first: the events stay in time order")
    func deadlinesFirst() throws {
        var timeline = Timeline()
        guard case .request(var request) = RemoteStartRuleTests.request(token: "aa01") else { return }
        request.content = content(staleDate: timeline.now + .seconds(60))
        try timeline.send(.request(request))
        let accepted = timeline.now + .seconds(1)
        timeline.advance(Self.window * 2)
        #expect(try timeline.send(Self.flag(accepted: accepted)).map(\.type) == [.becameStale, .startUnconfirmed])
        #expect(timeline.state == .stale)
    }

    @Test(
        "an ended activity still waiting for its first token can be unconfirmed; with a token, dismissed, or pending it cannot"
    )
    func onlyWhileAwaitingTheFirstToken() throws {
        var (ended, accepted) = try Self.started()
        try ended.send(.end(.init(dismissal: .default)))
        ended.advance(Self.window + .seconds(1))
        #expect(try ended.send(Self.flag(accepted: accepted)).map(\.type) == [.startUnconfirmed])
        #expect(ended.state == .ended)

        var confirmed = try Self.started().0
        try confirmed.send(.registerPushToken("bb02"))
        confirmed.advance(Self.window * 2)
        var dismissed = try Self.started().0
        try dismissed.send(.end(.init(dismissal: .immediate)))
        dismissed.advance(Self.window * 2)
        var pending = Timeline()
        guard case .request(var scheduled) = RemoteStartRuleTests.request(token: "aa01") else { return }
        scheduled.startDate = pending.now + Self.window * 4
        try pending.send(.request(scheduled))
        pending.advance(Self.window * 2)
        for (name, var timeline, state) in [
            ("confirmed", confirmed, ActivityState.active), ("dismissed", dismissed, .dismissed),
            ("pending", pending, .pending),
        ] {
            let rejection = timeline.rejection(of: Self.flag(accepted: accepted))
            #expect(
                rejection == .invalidTransition(command: "flag unconfirmed start", state: state),
                "\(name)"
            )
        }
    }

    @Test("an activity on a channel has no token to wait for")
    func notOnAChannel() throws {
        var timeline = Timeline()
        guard case .request(var request) = RemoteStartRuleTests.request(token: "aa01") else { return }
        request.pushType = .channel
        request.channel = BroadcastChannel(id: "dHN0LXNyY2gtY2hubA==", storagePolicy: MessageStoragePolicy.none)
        try timeline.send(.request(request))
        timeline.advance(Self.window * 2)
        #expect(
            timeline.rejection(of: Self.flag(accepted: Timeline.start))
                == .invalidTransition(command: "flag unconfirmed start", state: .active)
        )
    }

    @Test("strict replay refuses one the machine would not have recorded")
    func strictReplay() throws {
        var (timeline, accepted) = try Self.started()
        timeline.advance(Self.window + .seconds(1))
        let lifecycle = timeline.lifecycle
        let before = try #require(timeline.activity)
        let legal = try #require(try timeline.send(Self.flag(accepted: accepted)).first)
        guard case .startUnconfirmed(let flag) = legal.payload else { return }
        var early = flag
        early.tokenDueBy = legal.occurredAt + .seconds(1)
        var none = flag
        none.unconfirmedInARow = 0
        var withToken = before
        withToken.pushToken = "bb02"
        let tampered: [(String, Activity, ActivityEvent)] = [
            (
                "by the app", before,
                ActivityEvent(version: 2, occurredAt: legal.occurredAt, cause: .app, payload: legal.payload)
            ),
            (
                "before its window", before,
                ActivityEvent(
                    version: 2,
                    occurredAt: legal.occurredAt,
                    cause: .system,
                    payload: .startUnconfirmed(early)
                )
            ),
            (
                "counting nothing", before,
                ActivityEvent(
                    version: 2,
                    occurredAt: legal.occurredAt,
                    cause: .system,
                    payload: .startUnconfirmed(none)
                )
            ),
            ("after the token", withToken, legal),
        ]
        #expect(throws: Never.self) { try lifecycle.evolve(before, with: legal) }
        for (name, activity, event) in tampered {
            #expect(throws: IllegalEvent.self, "\(name)") { try lifecycle.evolve(activity, with: event) }
        }
    }
}

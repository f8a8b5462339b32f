import ActivityLifecycle
import CanonicalJSON
import Foundation
import Testing

/// SPEC §2's table, one test per row, one case per column (state).
@Suite("The transition table of SPEC §2")
struct TransitionTableTests {
    enum Expected: Equatable {
        case to(ActivityState)
        case noOp
        case reject(String)
    }

    /// An activity in `state`. Its stale date is an hour away and its start date (when pending)
    /// half an hour away, so nothing is due yet.
    static func timeline(in state: ActivityState) -> Timeline {
        var timeline = Timeline()
        let later = timeline.now + .hours(1)
        switch state {
        case .pending:
            try! timeline.send(Make.request(staleDate: later, startDate: timeline.now + .minutes(30)))
        case .active:
            try! timeline.send(Make.request(staleDate: later))
        case .stale:
            try! timeline.send(Make.request(staleDate: later))
            timeline.now = later
            timeline.applyDeadlines()
        case .ended:
            try! timeline.send(Make.request(staleDate: later))
            try! timeline.send(Make.end(.default))
        case .dismissed:
            try! timeline.send(Make.request(staleDate: later))
            try! timeline.send(Make.end(.immediate))
        }
        #expect(timeline.state == state)
        return timeline
    }

    /// Sends `command` to an activity in `state` and compares the outcome.
    private func check(
        _ state: ActivityState,
        _ command: Command,
        at time: ((Timeline) -> Timestamp)? = nil,
        expect expected: Expected
    ) {
        var timeline = Self.timeline(in: state)
        if let time { timeline.now = time(timeline) }
        let before = timeline.events.count
        let outcome: Expected
        if let rejection = timeline.rejection(of: command) {
            outcome = .reject(rejection.code)
        } else {
            outcome = timeline.events.count == before ? .noOp : .to(timeline.state!)
        }
        #expect(outcome == expected, "\(command.name) on \(state)")
    }

    @Test("request: creates the activity, pending when its start date is in the future, else active")
    func requestCreates() throws {
        var scheduled = Timeline()
        try scheduled.send(Make.request(startDate: scheduled.now + .seconds(1)))
        #expect(scheduled.state == .pending)

        var immediate = Timeline()
        try immediate.send(Make.request())
        #expect(immediate.state == .active)

        var startingNow = Timeline()
        try startingNow.send(Make.request(startDate: startingNow.now))
        #expect(startingNow.state == .active)
    }

    @Test("request: an id that exists is refused", arguments: ActivityState.allCases)
    func requestExisting(state: ActivityState) {
        check(state, Make.request(), expect: .reject("activity_exists"))
    }

    @Test("start (system, at startDate)", arguments: ActivityState.allCases)
    func start(state: ActivityState) {
        let expected: Expected = state == .pending ? .to(.active) : .reject("invalid_transition")
        check(state, .start, at: { $0.activity?.startDate ?? $0.now }, expect: expected)
    }

    @Test("update (app)", arguments: ActivityState.allCases)
    func update(state: ActivityState) {
        let expected: [ActivityState: Expected] = [
            .pending: .to(.pending), .active: .to(.active), .stale: .to(.active),
            .ended: .reject("activity_ended"), .dismissed: .reject("activity_ended"),
        ]
        check(state, Make.update(), expect: expected[state]!)
    }

    @Test("mark stale (system, at staleDate)", arguments: ActivityState.allCases)
    func markStale(state: ActivityState) {
        // At the stale date — for the pending activity, while it is still pending.
        let expected: Expected = state == .active ? .to(.stale) : .noOp
        check(
            state,
            .markStale,
            at: { $0.state == .pending ? $0.now : $0.activity!.content.staleDate! },
            expect: expected
        )
    }

    @Test("end (app)", arguments: ActivityState.allCases)
    func endByApp(state: ActivityState) {
        let expected: [ActivityState: Expected] = [
            // Rule 5: ending a pending activity dismisses it immediately.
            .pending: .to(.dismissed), .active: .to(.ended), .stale: .to(.ended),
            .ended: .reject("activity_ended"), .dismissed: .reject("activity_ended"),
        ]
        check(state, Make.end(.default), expect: expected[state]!)
    }

    @Test("end (system, at the lifetime limit)", arguments: ActivityState.allCases)
    func endAtLifetime(state: ActivityState) {
        let expected: [ActivityState: Expected] = [
            .pending: .reject("invalid_transition"), .active: .to(.ended), .stale: .to(.ended),
            .ended: .reject("activity_ended"), .dismissed: .reject("activity_ended"),
        ]
        check(
            state,
            .end(.init(dismissal: .default, reason: .lifetimeExceeded)),
            at: { $0.state == .pending ? $0.now : $0.activity!.requestedAt + .hours(8) },
            expect: expected[state]!
        )
    }

    @Test("dismiss (device-reported removal)", arguments: ActivityState.allCases)
    func dismissByDevice(state: ActivityState) {
        let expected: Expected = state == .dismissed ? .reject("activity_dismissed") : .to(.dismissed)
        check(state, .dismiss(.userRemoved), expect: expected)
    }

    @Test("dismiss (system, at the dismissal deadline)", arguments: ActivityState.allCases)
    func dismissAtDeadline(state: ActivityState) {
        let expected: [ActivityState: Expected] = [
            .pending: .reject("invalid_transition"), .active: .reject("invalid_transition"),
            .stale: .reject("invalid_transition"), .ended: .to(.dismissed), .dismissed: .reject("activity_dismissed"),
        ]
        check(state, .dismiss(.deadline), at: { $0.activity!.dismissalDate ?? $0.now }, expect: expected[state]!)
    }

    @Test("register push token", arguments: ActivityState.allCases)
    func registerPushToken(state: ActivityState) {
        // An ended activity without a token (as here) takes one, so that its end reaches it.
        let expected: Expected = state.isOpen || state == .ended ? .to(state) : .reject("activity_ended")
        check(state, .registerPushToken("new-token"), expect: expected)
    }

    @Test("an ended activity that had a token takes no other")
    func endedWithToken() throws {
        var timeline = Timeline()
        try timeline.send(Make.request())
        try timeline.send(.registerPushToken("token-1"))
        try timeline.send(Make.end())
        #expect(timeline.rejection(of: .registerPushToken("token-2")) == .activityEnded(state: .ended))
    }

    @Test("commands other than request need an existing activity")
    func notFound() {
        var timeline = Timeline()
        for command in [
            Command.start, Make.update(), .markStale, Make.end(), .dismiss(.userRemoved), .registerPushToken("t"),
        ] {
            #expect(timeline.rejection(of: command) == .activityNotFound)
        }
    }

    @Test("docs/lifecycle.md holds the table the code computes")
    func documentMatchesCode() throws {
        let document = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appending(path: "docs/lifecycle.md")
        let text = try String(contentsOf: document, encoding: .utf8)
        let begin = "<!-- BEGIN GENERATED: liveline lifecycle -->\n"
        let end = "<!-- END GENERATED -->"
        let start = try #require(text.range(of: begin), "docs/lifecycle.md lacks the generated section")
        let stop = try #require(text.range(of: end, range: start.upperBound..<text.endIndex))
        let generated = String(text[start.upperBound..<stop.lowerBound])
        #expect(
            generated == TransitionTable(lifecycle: Lifecycle()).markdown + "\n",
            "docs/lifecycle.md is out of date: regenerate its table with `swift run liveline lifecycle`"
        )
    }
}

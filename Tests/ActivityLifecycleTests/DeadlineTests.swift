import ActivityLifecycle
import CanonicalJSON
import Testing

@Suite("Deadlines")
struct DeadlineTests {
    @Test("each state's next deadline", arguments: ActivityState.allCases)
    func perState(state: ActivityState) {
        let timeline = TransitionTableTests.timeline(in: state)
        let activity = timeline.activity!
        let deadline = timeline.lifecycle.nextDeadline(of: activity)
        switch state {
        case .pending: #expect(deadline == Deadline(kind: .start, due: activity.startDate!))
        case .active: #expect(deadline == Deadline(kind: .stale, due: activity.content.staleDate!))
        case .stale: #expect(deadline == Deadline(kind: .lifetime, due: activity.activatedAt! + .hours(8)))
        case .ended: #expect(deadline == Deadline(kind: .dismissal, due: activity.dismissalDate!))
        case .dismissed: #expect(deadline == nil)
        }
    }

    @Test("when the stale date and the lifetime coincide, the lifetime comes first")
    func tie() throws {
        var timeline = Timeline()
        try timeline.send(Make.request(staleDate: Timeline.start + .hours(8)))
        #expect(timeline.lifecycle.nextDeadline(of: timeline.activity!)?.kind == .lifetime)
        timeline.now = Timeline.start + .hours(8)
        #expect(timeline.applyDeadlines().map(\.type) == [.ended])
    }

    @Test("after downtime, every due deadline is applied in order, each at its own due time")
    func catchUp() throws {
        var timeline = Timeline()
        let startDate = timeline.now + .hours(1)
        try timeline.send(Make.request(staleDate: startDate + .hours(2), startDate: startDate))
        timeline.advance(.hours(20))
        let events = timeline.applyDeadlines()
        #expect(events.map(\.type) == [.started, .becameStale, .ended, .dismissed])
        #expect(
            events.map(\.occurredAt) == [
                startDate, startDate + .hours(2), startDate + .hours(8), startDate + .hours(12),
            ]
        )
        #expect(events.map(\.cause) == [.system, .system, .system, .system])
        #expect(timeline.state == .dismissed)
    }

    @Test("an app command applies due deadlines first, so nothing is skipped")
    func commandCatchesUp() throws {
        var timeline = Timeline()
        let staleDate = timeline.now + .minutes(10)
        try timeline.send(Make.request(staleDate: staleDate))
        timeline.advance(.minutes(30))
        let events = try timeline.send(Make.update())
        #expect(events.map(\.type) == [.becameStale, .updated])
        #expect(events.first?.occurredAt == staleDate)
        #expect(timeline.state == .active)
    }

    @Test("a deadline is never due before the last event")
    func notBeforeLastEvent() throws {
        var timeline = Timeline()
        let startDate = timeline.now + .hours(1)
        try timeline.send(Make.request(staleDate: timeline.now + .minutes(1), startDate: startDate))
        timeline.now = startDate
        timeline.applyDeadlines()
        // The stale date passed while pending: it applies when the activity starts, not before.
        #expect(timeline.events.map(\.type) == [.requested, .started, .becameStale])
        #expect(timeline.events.last?.occurredAt == startDate)
    }

    @Test("each deadline kind maps to the system command that applies it")
    func commands() {
        #expect(Deadline(kind: .start, due: Timeline.start).command == .start)
        #expect(Deadline(kind: .stale, due: Timeline.start).command == .markStale)
        #expect(Deadline(kind: .lifetime, due: Timeline.start).command.cause == .system)
        #expect(Deadline(kind: .dismissal, due: Timeline.start).command == .dismiss(.deadline))
    }
}

import ActivityLifecycle
import CanonicalJSON
import Testing

@Suite("Rule 10: strict replay")
struct StrictReplayTests {
    let stream = StreamID(app: AppID(rawValue: "demo")!, activity: ActivityID(rawValue: "order-1")!)
    let lifecycle = Lifecycle()

    /// A legal stream: requested, updated, became stale, ended, dismissed.
    func legalStream() throws -> [ActivityEvent] {
        var timeline = Timeline()
        try timeline.send(Make.request(staleDate: timeline.now + .minutes(20)))
        timeline.advance(.minutes(10))
        try timeline.send(Make.update(alert: Alert(title: "Out for delivery", body: "2 stops away")))
        timeline.advance(.minutes(15))
        try timeline.send(Make.update(3, staleDate: timeline.now))
        timeline.advance(.minutes(1))
        try timeline.send(.registerPushToken("abc"))
        try timeline.send(Make.end(.immediate))
        return timeline.events
    }

    @Test("a legal stream folds to the state its decisions produced")
    func legal() throws {
        let events = try legalStream()
        #expect(
            events.map(\.type) == [.requested, .updated, .updated, .becameStale, .pushTokenChanged, .ended, .dismissed]
        )
        let folded = try lifecycle.fold(events, of: stream)
        #expect(folded?.state == .dismissed)
        #expect(folded?.version == events.count)
    }

    @Test("an empty stream folds to nothing")
    func empty() throws {
        #expect(try lifecycle.fold([], of: stream) == nil)
    }

    /// Folds `events` and returns the corruption found.
    private func corruption(_ events: [ActivityEvent]) -> CorruptionError? {
        do {
            _ = try lifecycle.fold(events, of: stream)
            return nil
        } catch {
            return error
        }
    }

    @Test("a version gap is corruption, naming the stream and version")
    func versionGap() throws {
        var events = try legalStream()
        events.remove(at: 2)
        let error = try #require(corruption(events))
        #expect(error.stream == stream)
        #expect(error.version == 4)
        #expect(error.reason.contains("follows version 2"))
        #expect(error.description.hasPrefix("stream demo/order-1, version 4"))
    }

    @Test("a duplicated version is corruption")
    func duplicate() throws {
        var events = try legalStream()
        events.insert(events[1], at: 2)
        #expect(corruption(events)?.version == 2)
    }

    @Test("a stream that does not begin with activity.requested is corruption")
    func missingRequest() throws {
        let events = Array(try legalStream().dropFirst())
        let error = try #require(corruption(events))
        #expect(error.reason.contains("begins with activity.updated"))
    }

    @Test("an update after the end is corruption")
    func updateAfterEnd() throws {
        var events = try legalStream()
        let ended = events[5]
        events.removeLast()
        events.append(ActivityEvent(version: 7, occurredAt: ended.occurredAt, cause: .app, payload: events[1].payload))
        let error = try #require(corruption(events))
        #expect(error.version == 7)
        #expect(error.reason == "activity.updated while ended")
    }

    @Test("activity.started on an active activity is corruption")
    func startedWhileActive() throws {
        var events = Array(try legalStream().prefix(1))
        events.append(ActivityEvent(version: 2, occurredAt: events[0].occurredAt, cause: .system, payload: .started))
        #expect(corruption(events)?.reason == "activity.started while active")
    }

    @Test("an event earlier than the one before it is corruption")
    func backInTime() throws {
        var events = try legalStream()
        events[1].occurredAt = events[0].occurredAt - .seconds(1)
        #expect(corruption(events)?.reason.contains("before the previous event") == true)
    }

    @Test("became_stale before the stale date is corruption")
    func staleTooEarly() throws {
        var events = Array(try legalStream().prefix(1))
        events.append(
            ActivityEvent(version: 2, occurredAt: events[0].occurredAt, cause: .system, payload: .becameStale)
        )
        #expect(corruption(events)?.reason == "activity.became_stale before its stale date")
    }

    @Test("a payload over the limit is corruption")
    func oversize() throws {
        var events = Array(try legalStream().prefix(1))
        let attributes = JSONObject(["order": .string("A-1")])
        events.append(
            ActivityEvent(
                version: 2,
                occurredAt: events[0].occurredAt,
                cause: .app,
                payload: .updated(
                    .init(
                        content: content(totalSize: 4097, attributes: attributes),
                        alert: nil,
                        priority: .low,
                        downgraded: false,
                        timestamp: nil
                    )
                )
            )
        )
        #expect(corruption(events)?.reason.contains("4097 bytes") == true)
    }

    @Test("a dismissal date beyond the window is corruption")
    func dismissalOutsideWindow() throws {
        var events = Array(try legalStream().prefix(1))
        let at = events[0].occurredAt
        events.append(
            ActivityEvent(
                version: 2,
                occurredAt: at,
                cause: .app,
                payload: .ended(
                    .init(
                        reason: .app,
                        content: nil,
                        dismissalPolicy: .after,
                        dismissalDate: at + .hours(5),
                        timestamp: nil
                    )
                )
            )
        )
        #expect(corruption(events)?.reason.contains("outside") == true)
    }

    @Test("a lifetime end before the lifetime ran out is corruption")
    func earlyLifetimeEnd() throws {
        var events = Array(try legalStream().prefix(1))
        let at = events[0].occurredAt + .hours(1)
        events.append(
            ActivityEvent(
                version: 2,
                occurredAt: at,
                cause: .system,
                payload: .ended(
                    .init(
                        reason: .lifetimeExceeded,
                        content: nil,
                        dismissalPolicy: .default,
                        dismissalDate: at + .hours(4),
                        timestamp: nil
                    )
                )
            )
        )
        #expect(corruption(events)?.reason == "lifetime end before the lifetime ran out")
    }

    @Test("a second dismissal is corruption")
    func dismissedTwice() throws {
        var events = try legalStream()
        let last = events.last!
        events.append(
            ActivityEvent(
                version: last.version + 1,
                occurredAt: last.occurredAt,
                cause: .device,
                payload: .dismissed(.init(reason: .userRemoved))
            )
        )
        #expect(corruption(events)?.reason == "activity.dismissed twice")
    }
}

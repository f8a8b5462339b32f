import ActivityLifecycle
import CanonicalJSON
import EventStore
import Testing

@Suite("Unconfirmed starts in the store: remote starts APNs accepted, settled once their window ran out")
struct UnconfirmedStartTests {
    static let window = LifecyclePolicy.standard.startConfirmationWindow
    static let device = "phone-1"

    static func remoteStart(token: String = "aa01", device: String = device) -> Command {
        guard case .request(var request) = requestCommand(device: device) else { preconditionFailure("a request") }
        request.remoteStart = RemoteStart(pushToStartToken: token, alert: Alert(title: "t", body: "b"))
        return .request(request)
    }

    /// Requests a remote start on `stream` at `time`, and records that APNs accepted it a second later.
    @discardableResult
    static func acceptedStart(
        _ stream: StreamID,
        token: String = "aa01",
        at time: Timestamp,
        in store: EventStore
    ) async throws -> Timestamp {
        let result = try await store.execute(remoteStart(token: token), on: stream, at: time)
        let position = try #require(result.appended.first?.position)
        let accepted = time + .seconds(1)
        let start = AcceptedStart(stream: stream, position: position, token: token, acceptedAt: accepted)
        let writes = DeliveryWrites(acceptedStarts: [start])
        try await store.recordDeliveries(writes, cursors: [:], worker: "test")
        // Recorded once, however often the worker records it.
        try await store.recordDeliveries(writes, cursors: [:], worker: "test")
        return accepted
    }

    @Test("a start with no push token when its window runs out is recorded unconfirmed, once, at its due time")
    func windowRunsOut() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = fixture.stream("s1")
            let accepted = try await Self.acceptedStart(stream, at: fixture.now, in: store)
            #expect(try await store.earliestStartConfirmation() == accepted + Self.window)
            #expect(try await store.settleDueStarts(at: accepted + Self.window - .microseconds(1), limit: 10).isEmpty)

            let settled = try await store.settleDueStarts(at: accepted + Self.window + .seconds(5), limit: 10)
            #expect(settled.verdicts == [.unconfirmed])
            let event = try #require(settled.appended.first)
            #expect(settled.appended.count == 1 && event.stream == stream)
            #expect(event.event.occurredAt == accepted + Self.window && event.event.cause == .system)
            #expect(
                event.event.payload
                    == .startUnconfirmed(
                        UnconfirmedStart(
                            pushToStartToken: "aa01",
                            acceptedAt: accepted,
                            tokenDueBy: accepted + Self.window,
                            unconfirmedInARow: 1,
                            tokenSuspect: false
                        )
                    )
            )
            // As the log keeps it, and in the activity's version.
            #expect(try await store.events(of: stream).last == event)
            #expect(try await store.activity(stream)?.activity.version == 2)
            #expect(try await store.settleDueStarts(at: accepted + Self.window * 3, limit: 10).isEmpty)
            #expect(try await store.earliestStartConfirmation() == nil)
        }
    }

    @Test("a start whose token came in time is confirmed, and nothing is appended")
    func tokenInTime() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = fixture.stream("s1")
            let accepted = try await Self.acceptedStart(stream, at: fixture.now, in: store)
            try await store.execute(.registerPushToken("bb02"), on: stream, at: accepted + .seconds(3))
            let settled = try await store.settleDueStarts(at: accepted + Self.window, limit: 10)
            #expect(settled.verdicts == [.confirmed] && settled.appended.isEmpty)
            #expect(try await store.events(of: stream).map(\.event.type) == [.requested, .pushTokenChanged])
        }
    }

    @Test("an ended activity without a token is unconfirmed; a dismissed one has no verdict")
    func endedAndDismissed() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let ended = fixture.stream("ended")
            let dismissed = fixture.stream("dismissed")
            let accepted = try await Self.acceptedStart(ended, at: fixture.now, in: store)
            try await Self.acceptedStart(dismissed, at: fixture.now, in: store)
            try await store.execute(.end(.init(dismissal: .default)), on: ended, at: accepted + .seconds(5))
            try await store.execute(.end(.init(dismissal: .immediate)), on: dismissed, at: accepted + .seconds(5))
            let settled = try await store.settleDueStarts(at: accepted + Self.window, limit: 10)
            #expect(settled.verdicts.sorted { $0.rawValue < $1.rawValue } == [.dismissed, .unconfirmed])
            #expect(settled.appended.map(\.stream) == [ended])
            #expect(try await store.activity(ended)?.activity.state == .ended)
            #expect(try await store.events(of: dismissed).map(\.event.type) == [.requested, .ended, .dismissed])
        }
    }

    @Test(
        "starts to one token unconfirmed in a row make it suspect; a confirmed start, or a token that came late, ends the run"
    )
    func suspectToken() async throws {
        var policy = LifecyclePolicy.standard
        policy.suspectAfterUnconfirmedStarts = 2
        let fixture = try await StoreFixture.make()
        try await fixture.withStore(policy: policy) { store in
            let slot = PushToStartSlot(
                app: fixture.app,
                device: DeviceID(rawValue: Self.device)!,
                activityType: "delivery"
            )
            // Registered in capitals; starts go to it in lowercase.
            _ = try await store.registerPushToStartToken("AA01", for: slot)
            var time = fixture.now
            var flags: [UnconfirmedStart] = []
            for index in 1...4 {
                let stream = fixture.stream("s\(index)")
                let accepted = try await Self.acceptedStart(stream, at: time, in: store)
                // The first start is confirmed; another token's start counts for that token alone.
                if index == 1 { try await store.execute(.registerPushToken("bb02"), on: stream, at: accepted) }
                if index == 3 {
                    try await Self.acceptedStart(fixture.stream("other"), token: "cc03", at: time, in: store)
                }
                time = accepted + Self.window
                let settled = try await store.settleDueStarts(at: time, limit: 10)
                flags += settled.appended.compactMap {
                    if case .startUnconfirmed(let flag) = $0.event.payload, flag.pushToStartToken == "aa01" {
                        flag
                    } else {
                        nil
                    }
                }
                time = time + .seconds(60)
            }
            #expect(flags.map(\.unconfirmedInARow) == [1, 2, 3])
            #expect(flags.map(\.tokenSuspect) == [false, true, true])
            var current = try #require(try await store.pushToStartToken(of: slot)?.current)
            #expect(current.unconfirmedStartsInARow == 3 && current.isSuspect)

            // The last start's token comes late: the device did show it, so the run is over.
            try await store.execute(.registerPushToken("dd04"), on: fixture.stream("s4"), at: time)
            current = try #require(try await store.pushToStartToken(of: slot)?.current)
            #expect(current.unconfirmedStartsInARow == 0 && !current.isSuspect)
        }
    }

    @Test("starts accepted by one process are settled by two others after it stopped, each once, the runs exact")
    func sharedAndAfterARestart() async throws {
        let fixture = try await StoreFixture.make(
            settings: AppSettings(bundleID: "com.example.delivery", maxOpen: 100, pushToStartBudgetPerHour: 100)
        )
        let count = 24
        let accepted = try await fixture.withStore { store in
            var accepted = fixture.now
            for index in 0..<count {
                accepted = try await Self.acceptedStart(
                    fixture.stream("s\(index)"),
                    at: fixture.now + .seconds(index),
                    in: store
                )
            }
            return accepted
        }
        let due = accepted + Self.window
        let settled = try await withThrowingTaskGroup(of: [EventStore.SettledStarts].self) { group in
            for _ in 0..<2 {
                group.addTask {
                    try await fixture.withStore { store in
                        var batches: [EventStore.SettledStarts] = []
                        while true {
                            let batch = try await store.settleDueStarts(at: due, limit: 5)
                            if batch.isEmpty { return batches }
                            batches.append(batch)
                        }
                    }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(settled.flatMap(\.verdicts).count == count)
        let streams = settled.flatMap(\.appended).map(\.stream)
        #expect(Set(streams).count == count && streams.count == count)
        // Each of the device's starts went to the same token: the run grows one start at a time.
        let runs = settled.flatMap(\.appended).compactMap {
            if case .startUnconfirmed(let flag) = $0.event.payload { flag.unconfirmedInARow } else { nil }
        }
        #expect(runs.sorted() == Array(1...count))
    }
}

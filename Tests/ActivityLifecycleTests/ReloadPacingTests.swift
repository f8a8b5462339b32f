import ActivityLifecycle
import CanonicalJSON
import PropertyBased
import PropertyChecks
import Testing

/// A device's widget reloads against random requests, clocks and APNs answers, with a worker
/// that sends what is due now and then.
@Suite("Reload pacing: at most one reload per interval, the last request always followed by one")
struct ReloadPacingTests {
    static let start = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)

    /// One random step: a request, or a turn of the worker (which sends what is due and may get
    /// its answer, success or a retry), after some seconds.
    struct Step: Sendable, CustomStringConvertible {
        let kind: Int
        let secondsLater: Int
        var description: String { "(\(kind) +\(secondsLater)s)" }
    }

    static let steps = zip(Gen.int(in: 0...5), Gen.int(in: 0...900))
        .map { Step(kind: $0, secondsLater: $1) }
        .array(of: 1...60)

    /// The simulated device: what was requested and when, and every reload that reached it.
    struct World {
        let interval: Duration
        var now = ReloadPacingTests.start
        var pacing = ReloadPacing()
        var nextRequest: Int64 = 1
        var requests: [(id: Int64, at: Timestamp)] = []
        var delivered: [(reload: Int64, at: Timestamp)] = []
        var sentAt: Timestamp?

        init(interval: Duration) { self.interval = interval }

        mutating func run(_ step: Step) {
            now = now + .seconds(step.secondsLater)
            switch step.kind {
            case 0, 1, 2:
                let id = nextRequest
                nextRequest += 1
                requests.append((id, now))
                if case .send(let sending) = pacing.request(id, at: now, interval: interval) {
                    #expect(sending.reload == id && sending.attempt == 1)
                    sentAt = now
                }
            case 3:
                send()
            case 4:
                answer(delivered: true)
            default:
                answer(delivered: false)
            }
        }

        mutating func send() {
            if pacing.takeDue(at: now) != nil { sentAt = now }
        }

        mutating func answer(delivered ok: Bool) {
            guard let sending = pacing.sending, let sentAt else { return }
            if ok { delivered.append((sending.reload, sentAt)) }
            pacing.settle(retryAt: ok ? nil : now + .seconds(30))
        }

        /// No more requests: the worker sends what is due and APNs takes everything.
        mutating func drain() {
            for _ in 0..<4 {
                answer(delivered: true)
                now = now + interval + .seconds(60)
                send()
            }
        }
    }

    @Test(
        "two reloads that reached the device are at least the interval apart",
        arguments: [Duration.seconds(1800), .seconds(60)]
    )
    func spaced(interval: Duration) async {
        await checkProperty(count: 1000, input: Self.steps) { steps in
            var world = World(interval: interval)
            for step in steps { world.run(step) }
            world.drain()
            for (earlier, later) in zip(world.delivered, world.delivered.dropFirst()) {
                #expect(later.at - earlier.at >= interval)
            }
        }
    }

    @Test(
        "the last request is followed by a reload that carries it, and no request is sent twice",
        arguments: [Duration.seconds(1800), .zero]
    )
    func lastRequestFollowed(interval: Duration) async {
        await checkProperty(count: 1000, input: Self.steps) { steps in
            var world = World(interval: interval)
            for step in steps { world.run(step) }
            world.drain()
            if let last = world.requests.last {
                #expect(world.delivered.last?.reload == last.id)
                #expect(world.delivered.last.map { $0.at >= last.at } == true)
            }
            let reloads = world.delivered.map(\.reload)
            #expect(Set(reloads).count == reloads.count)
            #expect(world.pacing.sending == nil && world.pacing.due == nil)
        }
    }

    @Test("with no interval every request goes at once, one at a time")
    func noInterval() {
        var pacing = ReloadPacing()
        let now = Self.start
        #expect(pacing.request(1, at: now, interval: .zero) == .send(.init(reload: 1, attempt: 1)))
        // One on its way: the next waits for it, and goes as soon as it is answered.
        #expect(pacing.request(2, at: now, interval: .zero) == .coalesce(until: now))
        #expect(pacing.takeDue(at: now) == nil)
        pacing.settle(retryAt: nil)
        #expect(pacing.takeDue(at: now) == .init(reload: 2, attempt: 1))
    }

    @Test("a retry keeps its attempts; a newer request waiting replaces it")
    func retries() {
        var pacing = ReloadPacing()
        let now = Self.start
        _ = pacing.request(1, at: now, interval: .seconds(1800))
        pacing.settle(retryAt: now + .seconds(2))
        #expect(pacing.due == .init(reload: 1, attempt: 1, at: now + .seconds(2)))
        #expect(pacing.takeDue(at: now + .seconds(2)) == .init(reload: 1, attempt: 2))
        #expect(
            pacing.request(2, at: now + .seconds(3), interval: .seconds(1800)) == .coalesce(until: now + .seconds(1802))
        )
        pacing.settle(retryAt: now + .seconds(10))
        #expect(pacing.due == .init(reload: 2, attempt: 0, at: now + .seconds(1802)))
    }
}

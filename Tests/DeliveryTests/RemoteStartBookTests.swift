import ActivityLifecycle
import CanonicalJSON
import EventStore
import Testing

@testable import Delivery

/// What the worker's book does with the answer to a push-to-start.
@Suite("Delivery book: remote starts")
struct RemoteStartBookTests {
    static let now = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)
    static let stream = StreamID(app: DeliveryBookPropertyTests.app, activity: ActivityID(rawValue: "kickoff")!)
    static let startToken = String(repeating: "AB", count: 32)

    /// A book that read one remote start, and the push it is sending.
    static func sending() throws -> (DeliveryBook, DeliveryBook.Send) {
        let lifecycle = Lifecycle()
        var book = DeliveryBook(renderer: PushRenderer(policy: .standard), lifecycle: lifecycle)
        book.adopt(Dictionary(uniqueKeysWithValues: (0..<DeliveryShard.count).map { ($0, Int64(0)) }), settled: [])
        book.shards.caughtUp()
        book.learn(
            stream.app,
            AppDelivery(
                topic: PushRenderer.topic(for: "com.example.game"),
                credentials: DeliveryBookPropertyTests.credentials,
                credentialsUpdatedAt: now,
                suspended: false,
                readAt: now
            )
        )
        var request = Command.Request(
            activityType: "MatchAttributes",
            content: ActivityContent(contentState: .empty),
            deviceID: DeviceID(rawValue: "phone-1")
        )
        request.remoteStart = RemoteStart(pushToStartToken: startToken, alert: Alert(title: "Kick-off", body: "Now"))
        let context = DecisionContext(
            app: AppRules(maxOpen: 10, priorityBudgetPerHour: 10),
            globalMaxOpen: 100,
            open: OpenCounts(app: 0, global: 0)
        )
        let events = try lifecycle.decide(.request(request), for: nil, at: now, context: context)
        book.absorb(events.map { StoredEvent(position: 1, stream: stream, event: $0, recordedAt: now) }, at: now)
        // Recorded `sending` before it goes, so that no worker ever sends it twice.
        #expect(book.takeReady(at: now, limit: 10).isEmpty)
        let (announced, _) = book.takePending()
        #expect(announced.records.map(\.outcome) == [.sending])
        book.recorded(announced)
        let send = try #require(book.takeReady(at: now, limit: 10).first)
        #expect(send.request.startsActivity && send.request.deviceToken == startToken.lowercased())
        return (book, send)
    }

    @Test("a start without an answer is not sent again: APNs may have received it")
    func unansweredStartFails() throws {
        var (book, send) = try Self.sending()
        let record = book.finish(send, response: .unanswered("timeout"), latency: .seconds(1), at: Self.now) { _ in
            .seconds(1)
        }
        #expect(record.outcome == .failed)
        #expect(record.reason?.contains("a start is not sent again") == true)
        #expect(book.takeReady(at: Self.now + .seconds(60), limit: 10).isEmpty)
    }

    @Test("a start APNs answered with a retryable error goes again: it was not delivered")
    func answeredStartIsRetried() throws {
        var (book, send) = try Self.sending()
        let response = APNsResponse.answered(
            status: 503,
            reason: "ServiceUnavailable",
            tokenInvalidSince: nil,
            apnsID: nil
        )
        let record = book.finish(send, response: response, latency: .seconds(1), at: Self.now) { _ in .seconds(1) }
        #expect(record.outcome == .retrying)
        #expect(book.takeReady(at: Self.now + .seconds(2), limit: 10).first?.attempt == 2)
    }

    @Test("a dead push-to-start token is invalidated in its device's slot, as it was registered")
    func deadStartTokenIsInvalidatedInItsSlot() throws {
        var (book, send) = try Self.sending()
        let response = APNsResponse.answered(status: 410, reason: "Unregistered", tokenInvalidSince: nil, apnsID: nil)
        #expect(
            book.finish(send, response: response, latency: .seconds(1), at: Self.now) { _ in .seconds(1) }.outcome
                == .tokenInvalidated
        )
        let invalidation = try #require(book.takePending().0.invalidations.first)
        #expect(invalidation.deviceToken == Self.startToken)
        #expect(
            invalidation.pushToStart
                == PushToStartSlot(
                    app: Self.stream.app,
                    device: DeviceID(rawValue: "phone-1")!,
                    activityType: "MatchAttributes"
                )
        )
    }
}

/// A start and the pushes after it in one activity's lane.
@Suite("Activity lane: a start is never superseded")
struct StartLaneTests {
    static func push(_ version: Int, start: Bool = false) -> ActivityLane.Push {
        ActivityLane.Push(
            position: Int64(version),
            version: version,
            request: APNsRequest(
                destination: start ? .device(token: "ab") : .channel(id: "Y2g=", storesMessage: true),
                topic: "com.example.game.push-type.liveactivity",
                priority: .high,
                expiration: RemoteStartBookTests.now + .seconds(3600),
                apnsID: "00000000-0000-8000-8000-00000000000\(version)",
                body: [],
                startsActivity: start
            ),
            committedAt: RemoteStartBookTests.now,
            notBefore: RemoteStartBookTests.now
        )
    }

    @Test("updates offered while a start waits wait behind it, the newest only")
    func updatesWaitBehindAStart() {
        var lane = ActivityLane()
        #expect(lane.offer(Self.push(1, start: true)) == nil)
        #expect(lane.offer(Self.push(2)) == nil)
        #expect(lane.offer(Self.push(3))?.version == 2)
        #expect(lane.earliestPosition == 1)
        #expect(lane.next(at: RemoteStartBookTests.now)?.version == 1)
        #expect(lane.next(at: RemoteStartBookTests.now) == nil)
        lane.settle()
        #expect(lane.next(at: RemoteStartBookTests.now)?.version == 3)
    }

    @Test("a retried start goes again before what waits")
    func aRetriedStartGoesFirst() {
        var lane = ActivityLane()
        _ = lane.offer(Self.push(1, start: true))
        _ = lane.next(at: RemoteStartBookTests.now)
        _ = lane.offer(Self.push(2))
        #expect(lane.retry(at: RemoteStartBookTests.now + .seconds(1)) == nil)
        #expect(lane.next(at: RemoteStartBookTests.now + .seconds(1))?.version == 1)
        lane.settle()
        #expect(lane.next(at: RemoteStartBookTests.now + .seconds(1))?.version == 2)
        #expect(lane.next(at: RemoteStartBookTests.now + .seconds(1)) == nil)
    }
}

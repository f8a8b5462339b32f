import ActivityLifecycle
import CanonicalJSON
import Crypto
import EventStore
import PropertyBased
import PropertyChecks
import Testing

@testable import Delivery

/// The delivery worker's rules, without a network or a database: random updates, ends, answers
/// and time, folded through a `DeliveryBook`.
@Suite("Delivery book properties")
struct DeliveryBookPropertyTests {
    struct Step: Sendable, CustomStringConvertible {
        /// 0–5 update, 6 end, 7–8 answer what is on the wire, 9 let time pass.
        let kind: Int
        let activity: Int
        /// Which answer: 0–5 → 200, 6 → 500, 7 → no answer, 8 → 410, 9 → 403.
        let answer: Int

        var description: String { "(\(kind) #\(activity) a\(answer))" }
    }

    static let steps = zip(Gen.int(in: 0...9), Gen.int(in: 0...3), Gen.int(in: 0...9))
        .map { Step(kind: $0, activity: $1, answer: $2) }
        .array(of: 1...60)

    static let app = AppID(rawValue: "game")!
    static let credentials = try! APNsCredentials(
        teamID: "TEAM000001",
        keyID: "KEY0000001",
        environment: .sandbox,
        privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation
    )

    /// A book holding every shard, four activities with tokens, and the log so far.
    struct World {
        let lifecycle = Lifecycle()
        var book: DeliveryBook
        var now = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)
        var position: Int64 = 0
        var activities: [Activity?] = Array(repeating: nil, count: 4)
        var onTheWire: [DeliveryBook.Send] = []
        var step = 0
        /// Positions that asked for a push, by activity, in order.
        var pushed: [[Int64]] = Array(repeating: [], count: 4)
        var records: [DeliveryRecord] = []

        init() {
            book = DeliveryBook(renderer: PushRenderer(policy: .standard), lifecycle: lifecycle, maximumAttempts: 1000)
            book.adopt(Dictionary(uniqueKeysWithValues: (0..<DeliveryShard.count).map { ($0, Int64(0)) }), settled: [])
            book.shards.caughtUp()
            book.learn(
                DeliveryBookPropertyTests.app,
                AppDelivery(
                    topic: PushRenderer.topic(for: "com.example.game"),
                    credentials: DeliveryBookPropertyTests.credentials,
                    credentialsUpdatedAt: now,
                    suspended: false,
                    readAt: now
                )
            )
            for index in 0..<4 {
                run(.request(.init(activityType: "A", content: ActivityContent(contentState: .empty))), on: index)
                run(.registerPushToken(String(repeating: "0\(index)", count: 32)), on: index)
            }
        }

        func stream(_ index: Int) -> StreamID {
            StreamID(app: DeliveryBookPropertyTests.app, activity: ActivityID(rawValue: "a\(index)")!)
        }

        mutating func run(_ command: Command, on index: Int) {
            let context = DecisionContext(
                app: AppRules(maxOpen: 10, priorityBudgetPerHour: 1000),
                globalMaxOpen: 100,
                open: OpenCounts(app: 0, global: 0)
            )
            guard let events = try? lifecycle.decide(command, for: activities[index], at: now, context: context) else {
                return
            }
            let stored = events.map { event in
                position += 1
                activities[index] = try! lifecycle.evolve(activities[index], with: event)
                return StoredEvent(position: position, stream: stream(index), event: event, recordedAt: now)
            }
            book.absorb(stored, at: now)
            for event in stored where [.updated, .ended].contains(event.event.type) {
                pushed[index].append(event.position)
            }
        }

        mutating func send() {
            for send in book.takeReady(at: now, limit: 100) {
                #expect(!onTheWire.contains { $0.stream == send.stream }, "two pushes of one activity on the wire")
                onTheWire.append(send)
            }
        }

        mutating func answerAll(with answer: Int) {
            let sends = onTheWire
            onTheWire = []
            for send in sends {
                let response: APNsResponse =
                    switch answer {
                    case 6: .answered(status: 500, reason: "InternalServerError", tokenInvalidSince: nil, apnsID: nil)
                    case 7: .unanswered("timeout")
                    case 8: .answered(status: 410, reason: "Unregistered", tokenInvalidSince: nil, apnsID: nil)
                    case 9: .answered(status: 403, reason: "InvalidProviderToken", tokenInvalidSince: nil, apnsID: nil)
                    default: .answered(status: 200, reason: nil, tokenInvalidSince: nil, apnsID: send.request.apnsID)
                    }
                book.finish(send, response: response, latency: .milliseconds(2), at: now, backoff: { _ in .seconds(1) })
            }
        }

        mutating func apply(_ step: Step) {
            now = now + .milliseconds(10)
            switch step.kind {
            case 0...5:
                self.step += 1
                let content = ActivityContent(contentState: JSONObject(["step": .number(JSONNumber(self.step))]))
                run(.update(.init(content: content, priority: .low)), on: step.activity)
            case 6:
                run(.end(.init()), on: step.activity)
            case 7, 8:
                answerAll(with: step.answer)
            default:
                now = now + .seconds(2)
            }
            send()
            records += book.takePending().0.records
        }

        /// Lets every retry come due and answers everything with 200.
        mutating func settle() {
            for _ in 0..<20 {
                now = now + .seconds(5)
                send()
                answerAll(with: 0)
                records += book.takePending().0.records
            }
        }
    }

    @Test(
        "each push is settled exactly once; at most one per activity is on the wire; APNs gets an activity's pushes in log order"
    )
    func settledOnceInOrder() async {
        await checkProperty(count: 300, input: Self.steps) { steps in
            var world = World()
            for step in steps { world.apply(step) }
            world.settle()
            for index in 0..<4 {
                let stream = world.stream(index)
                let mine = world.records.filter { $0.stream == stream }
                for position in world.pushed[index] {
                    let final = mine.filter { $0.position == position && $0.outcome.isFinal }
                    #expect(final.count == 1, "position \(position): \(final.map(\.outcome))")
                }
                let sent = mine.filter { $0.attempt > 0 }.map(\.position)
                #expect(zip(sent, sent.dropFirst()).allSatisfy { $0 <= $1 }, "sent out of order: \(sent)")
            }
            // Everything settled: each shard's cursor is as far as the log was read.
            #expect(Set(world.book.cursors.values) == [world.position])
        }
    }

    @Test("latest wins: unless APNs refused the token or the app, the newest push of each activity is delivered")
    func newestDelivered() async {
        await checkProperty(count: 300, input: Self.steps) { steps in
            var world = World()
            for step in steps { world.apply(step) }
            world.settle()
            let refused = Set(
                world.records.filter { [.tokenInvalidated, .appSuspended].contains($0.outcome) }.map(\.stream)
            )
            for index in 0..<4 where !refused.contains(world.stream(index)) {
                guard let newest = world.pushed[index].last else { continue }
                let outcome = world.records.last { $0.position == newest && $0.outcome.isFinal }?.outcome
                #expect(outcome == .delivered, "activity \(index), position \(newest): \(String(describing: outcome))")
            }
        }
    }
}

import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import PropertyBased
import PropertyChecks
import Testing

@testable import Delivery

/// A model of a reload worker walking one fan-out: its own book (`ReloadBook`) reading pages of
/// random sizes from a store kept in memory, taking reloads ahead, putting them on the wire,
/// APNs answering in any order, recording in batches (some of which fail, the database away), and
/// crashes at any step, after which a new worker reads on from the recorded cursor. What was
/// recorded survives; what the worker only knew does not. Then:
///
/// - a recorded cursor never passes a device whose outcome is not recorded (checked after every
///   record, so at whatever step a crash comes, nothing before the cursor is lost);
/// - once the world is quiet, every device has its outcome and the fan-out is recorded to its end;
/// - a device is sent again only after a crash that found it past the recorded cursor (what was on
///   its way, or answered on a page not yet recorded whole).
@Suite("Reload worker model: a fan-out's cursor moves only past recorded outcomes")
struct ReloadBookModelTests {
    struct Step: Sendable, CustomStringConvertible {
        let kind: Int
        let a: Int

        var description: String {
            ["take", "send", "answer", "answer", "record", "record (fails)", "crash"][kind] + "(\(a))"
        }
    }

    static let steps = zip(Gen.int(in: 0...6), Gen.int(in: 0...9)).map { Step(kind: $0, a: $1) }.array(of: 1...120)

    static let app = AppID(rawValue: "game")!
    /// Devices of one delivery shard, in key order (zero-padded: Swift's order is the database's).
    static let devices: [DeviceID] = {
        let all = (0..<400).map { DeviceID(rawValue: String(format: "phone-%04d", $0))! }
        let shard = DeliveryShard.of(app, device: all[0])
        return all.filter { DeliveryShard.of(app, device: $0) == shard }
    }()
    static let fanout = ReloadFanout(reload: 7, shard: DeliveryShard.of(app, device: devices[0]))

    /// What a database would hold: the outcomes recorded, and the fan-out's cursor.
    struct Recorded {
        var outcomes: Set<DeviceID> = []
        var cursor = ReloadFanout.Position.after("")

        /// The devices the cursor has passed.
        var passed: [DeviceID] {
            switch cursor {
            case .end: ReloadBookModelTests.devices
            case .after(let device): ReloadBookModelTests.devices.filter { $0.rawValue <= device }
            }
        }
    }

    /// One worker's life, until a crash.
    struct Worker {
        var book = ReloadBook()
        var wire: [ReadyReload] = []
    }

    final class World {
        var recorded = Recorded()
        var worker = Worker()
        var sends: [DeviceID: Int] = [:]
        /// Devices sent that the recorded cursor had not passed at a crash: they may be sent again.
        var mayRepeat: Set<DeviceID> = []
        var violations: [String] = []
        let now = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)

        /// The store's page: the devices after the worker's position (or the recorded cursor).
        func take(_ limit: Int) {
            guard worker.book.readyCount <= 8 else { return }
            let position = worker.book.reading[fanout] ?? recorded.cursor
            guard case .after(let after) = position else { return }
            let remaining = devices.filter { $0.rawValue > after }
            let page = Array(remaining.prefix(limit))
            let sends = page.map { device in
                ReloadSend(
                    slot: ReloadTokenSlot(app: app, device: device, kind: .widgets),
                    token: "aa",
                    reload: fanout.reload,
                    attempt: 1,
                    origin: .fanout
                )
            }
            let through: ReloadFanout.Position = page.count < limit ? .end : .after(page.last!.rawValue)
            let number = worker.book.read(ReloadPage(fanout: fanout, sends: sends, through: through))
            for send in sends {
                worker.book.take(
                    ReadyReload(
                        send: send,
                        request: ReloadPush.request(send, bundleID: "com.example.game", now: now),
                        credentials: DeliveryBookPropertyTests.credentials
                    ),
                    page: number,
                    at: now
                )
            }
        }

        func send(_ limit: Int) {
            let sent = worker.book.takeReady(limit: limit)
            for reload in sent { sends[reload.send.slot.device, default: 0] += 1 }
            worker.wire += sent
        }

        func answer(_ pick: Int) {
            guard !worker.wire.isEmpty else { return }
            let reload = worker.wire.remove(at: pick % worker.wire.count)
            _ = worker.book.answered(
                reload.send,
                request: reload.request,
                response: .answered(status: 200, reason: nil, tokenInvalidSince: nil, apnsID: nil),
                latency: .milliseconds(3),
                at: now,
                maximumAttempts: 8,
                backoff: { _ in .seconds(1) }
            )
        }

        func record(failing: Bool) {
            let batch = worker.book.takeUnrecorded()
            guard !failing else {
                worker.book.restore(batch)
                return
            }
            recorded.outcomes.formUnion(batch.outcomes.map(\.send.slot.device))
            if let cursor = batch.cursors[fanout] { recorded.cursor = cursor }
            worker.book.recorded(batch)
            let lost = recorded.passed.filter { !recorded.outcomes.contains($0) }
            if !lost.isEmpty { violations.append("the cursor \(recorded.cursor) passed \(lost) unrecorded") }
        }

        func crash() {
            mayRepeat.formUnion(Set(sends.keys).subtracting(recorded.passed))
            worker = Worker()
        }

        func apply(_ step: Step) {
            switch step.kind {
            case 0: take(step.a + 1)
            case 1: send(step.a + 1)
            case 2, 3: answer(step.a)
            case 4: record(failing: false)
            case 5: record(failing: true)
            default: crash()
            }
        }

        /// The world goes quiet: pages taken, sent, answered and recorded until the fan-out ends.
        func heal() {
            for _ in 0..<(devices.count * 4) {
                take(5)
                send(16)
                while !worker.wire.isEmpty { answer(0) }
                record(failing: false)
                if recorded.cursor == .end { break }
            }
        }

        func check() {
            #expect(violations.isEmpty, "\(violations)")
            #expect(recorded.cursor == .end, "the fan-out was not recorded to its end")
            #expect(recorded.outcomes == Set(devices), "devices without an outcome")
            let repeated = sends.filter { $0.value > 1 }.keys
            #expect(Set(repeated).isSubset(of: mayRepeat), "sent again with no crash to explain it")
        }
    }

    @Test(
        "a recorded cursor never passes an unrecorded outcome; every device is reached; repeats only of what a crash found past the cursor"
    )
    func theCursorFollowsTheOutcomes() async {
        #expect(Self.devices.count >= 10)
        await checkProperty(count: 2_000, input: Self.steps) { steps in
            let world = World()
            for step in steps { world.apply(step) }
            world.heal()
            world.check()
        }
    }
}

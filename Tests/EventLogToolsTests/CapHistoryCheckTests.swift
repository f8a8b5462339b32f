import ActivityLifecycle
import CanonicalJSON
import EventLogTools
import EventStore
import PropertyBased
import PropertyChecks
import Testing

/// The cap history replayed without a database: entries as the store reads them, in commit order.
@Suite("Caps over history: the replay of open counts")
struct CapHistoryCheckTests {
    static let apps = [AppID(rawValue: "app-a")!, AppID(rawValue: "app-b")!]
    static let devices = [DeviceID(rawValue: "phone-1")!, DeviceID(rawValue: "phone-2")!]
    static let start = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)

    /// Builds a history one entry a second, as a store would read it.
    struct History {
        var entries: [CapHistoryEntry] = []
        var clock = CapHistoryCheckTests.start
        var timed = true

        mutating func add(_ change: CapHistoryEntry.Change) {
            clock = clock + .seconds(1)
            entries.append(CapHistoryEntry(committedAt: timed ? clock : nil, change: change))
        }

        func check() -> CapHistoryCheck {
            var check = CapHistoryCheck()
            for entry in entries { check.apply(entry) }
            return check
        }
    }

    static func stream(_ name: String, of app: AppID = apps[0]) -> StreamID {
        StreamID(app: app, activity: ActivityID(rawValue: name)!)
    }

    @Test("an opening beyond the app cap is a breach; one after a closing made room is not")
    func appCap() {
        var history = History()
        history.add(.capSet(.app(Self.apps[0]), limit: 2))
        for name in ["a", "b", "c"] { history.add(.opened(Self.stream(name), device: nil)) }
        history.add(.closed(Self.stream("a")))
        history.add(.closed(Self.stream("b")))
        history.add(.opened(Self.stream("d"), device: nil))
        let check = history.check()
        #expect(check.findings.map(\.stream) == [Self.stream("c")])
        #expect(check.findings.map(\.rule) == [.cap])
        #expect(
            check.findings.first?.evidence.contains("app app-a's open activities 3, above the cap of app app-a of 2")
                == true
        )
        #expect(check.outcome.checkedOpenings == 4)
    }

    @Test("a cap lowered below the open count is no breach, but every opening above it is, until closings catch up")
    func loweredCap() {
        var history = History()
        history.add(.capSet(.app(Self.apps[0]), limit: 4))
        for name in ["a", "b", "c", "d"] { history.add(.opened(Self.stream(name), device: nil)) }
        history.add(.capSet(.app(Self.apps[0]), limit: 2))
        history.add(.closed(Self.stream("a")))
        history.add(.opened(Self.stream("e"), device: nil))
        for name in ["b", "c", "d"] { history.add(.closed(Self.stream(name))) }
        history.add(.opened(Self.stream("f"), device: nil))
        let check = history.check()
        #expect(check.findings.map(\.stream) == [Self.stream("e")])
        #expect(check.findings.first?.evidence.contains("above the cap of app app-a of 2 (set at") == true)
    }

    @Test("device and global caps: one finding per cap exceeded; devices of other apps and no device do not count")
    func deviceAndGlobalCaps() {
        var history = History()
        history.add(.capSet(.global, limit: 3))
        history.add(.capSet(.perDevice(Self.apps[0]), limit: 1))
        history.add(.capSet(.perDevice(Self.apps[1]), limit: 1))
        history.add(.opened(Self.stream("a"), device: Self.devices[0]))
        history.add(.opened(Self.stream("b", of: Self.apps[1]), device: Self.devices[0]))
        history.add(.opened(Self.stream("c"), device: nil))
        history.add(.opened(Self.stream("d"), device: Self.devices[0]))
        let check = history.check()
        #expect(check.findings.map(\.stream) == [Self.stream("d"), Self.stream("d")])
        #expect(check.findings.map(\.evidence).allSatisfy { $0.hasPrefix("opened at ") })
        #expect(
            check.findings[0].evidence.contains(
                "device phone-1 of app app-a 2, above the per-device cap of app app-a of 1"
            )
        )
        #expect(check.findings[1].evidence.contains("the open activities of all apps 4, above the global cap of 3"))
    }

    @Test("a per-device cap removed (no limit) allows any number; openings without a commit time are counted only")
    func noLimitAndUntimed() {
        var history = History()
        history.timed = false
        history.add(.capSet(.app(Self.apps[0]), limit: 1))
        history.add(.opened(Self.stream("a"), device: nil))
        history.add(.opened(Self.stream("b"), device: nil))
        history.timed = true
        history.add(.capSet(.perDevice(Self.apps[0]), limit: nil))
        history.add(.capSet(.app(Self.apps[0]), limit: 10))
        history.add(.opened(Self.stream("c"), device: Self.devices[1]))
        history.add(.opened(Self.stream("d"), device: Self.devices[1]))
        history.add(.capSet(.app(Self.apps[0]), limit: 4))
        history.add(.opened(Self.stream("e"), device: nil))
        let check = history.check()
        #expect(check.findings.map(\.stream) == [Self.stream("e")])
        #expect(check.outcome == CapHistoryCheck.Outcome(checkedOpenings: 3, uncheckedOpenings: 2))
    }

    /// One random step of a service: open (admitted only with room, or forced), close, or change a cap.
    struct Step: Sendable, CustomStringConvertible {
        let kind: Int
        let app: Int
        let device: Int
        let value: Int

        var description: String { "(\(kind) app \(app) device \(device) value \(value))" }
    }

    static let steps = zip(Gen.int(in: 0...9), Gen.int(in: 0...1), Gen.int(in: 0...2), Gen.int(in: 0...5))
        .map { Step(kind: $0, app: $1, device: $2, value: $3) }
        .array(of: 1...120)

    /// Plays `steps` as a store would, with a model of the counts of its own; openings of kind 9
    /// are forced past a full cap. Returns the history and the streams forced past a cap.
    static func play(_ steps: [Step]) -> (History, forced: Set<StreamID>) {
        var history = History()
        var limits: [CapHistoryEntry.Cap: Int] = [:]
        var open: [StreamID: DeviceID?] = [:]
        var forced: Set<StreamID> = []
        for (index, step) in steps.enumerated() {
            let app = apps[step.app]
            let device = step.device < devices.count ? devices[step.device] : nil
            switch step.kind {
            case 0...4, 9:
                let stream = StreamID(app: app, activity: ActivityID(rawValue: "s\(index)")!)
                let appCount = open.keys.count { $0.app == app }
                let deviceCount = device.map { device in open.count { $0.key.app == app && $0.value == device } } ?? 0
                let full =
                    limits[.app(app)].map { appCount >= $0 } == true
                    || (device != nil && limits[.perDevice(app)].map { deviceCount >= $0 } == true)
                    || limits[.global].map { open.count >= $0 } == true
                guard !full || step.kind == 9 else { continue }
                if full { forced.insert(stream) }
                open[stream] = device
                history.add(.opened(stream, device: device))
            case 5, 6:
                guard
                    let stream = open.keys.sorted(by: { $0.activity.rawValue < $1.activity.rawValue }).first(where: {
                        $0.app == app
                    })
                else { continue }
                open[stream] = nil
                history.add(.closed(stream))
            default:
                let cap: CapHistoryEntry.Cap = [.app(app), .perDevice(app), .global][step.device]
                limits[cap] = step.value
                history.add(.capSet(cap, limit: step.value))
            }
        }
        return (history, forced)
    }

    @Test("property: openings admitted only with room are never breaches; every forced opening is, and only those")
    func forcedOpeningsAreExactlyTheBreaches() async {
        await checkProperty(count: 500, input: Self.steps) { steps in
            let (history, forced) = Self.play(steps)
            let check = history.check()
            #expect(Set(check.findings.map(\.stream)) == forced)
            #expect(check.findings.allSatisfy { $0.rule == .cap && $0.version == 1 })
            #expect(
                check.outcome.checkedOpenings
                    == history.entries.count { if case .opened = $0.change { true } else { false } }
            )
        }
    }
}

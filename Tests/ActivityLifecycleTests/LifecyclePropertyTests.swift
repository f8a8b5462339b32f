import ActivityLifecycle
import CanonicalJSON
import PropertyBased
import PropertyChecks
import Testing

/// Random command sequences against several activities of one app, with a simulated clock and a
/// deadline worker that runs now and then.
@Suite("Lifecycle properties")
struct LifecyclePropertyTests {
    /// One random step: which command, on which activity, after how long, with one free parameter.
    struct Step: Sendable, CustomStringConvertible {
        let command: Int
        let activity: Int
        let secondsLater: Int
        let parameter: Int

        var description: String { "(cmd \(command) on #\(activity) +\(secondsLater)s p\(parameter))" }
    }

    static let steps = zip(
        Gen.int(in: 0...11),
        Gen.int(in: 0...5),
        Gen.int(in: 0...7_200),
        Gen.int(in: 0...1_000)
    )
    .map { Step(command: $0, activity: $1, secondsLater: $2, parameter: $3) }
    .array(of: 1...80)

    /// The simulated world: a clock, activities, the open counts the store would keep.
    struct World {
        let lifecycle: Lifecycle
        let rules = AppRules(maxOpen: 3, maxOpenPerDevice: 2, priorityBudgetPerHour: 2)
        var now = Timeline.start
        var activities: [Activity?] = Array(repeating: nil, count: 6)
        var streams: [[ActivityEvent]] = Array(repeating: [], count: 6)
        /// Open activities, kept by the deltas of each decision, as the store will.
        var openCount = 0
        var deviceOpen: [DeviceID: Int] = [:]
        var rejections: [String: Int] = [:]

        init(policy: LifecyclePolicy) {
            lifecycle = Lifecycle(policy: policy)
        }

        static let devices = [DeviceID(rawValue: "phone-a")!, DeviceID(rawValue: "phone-b")!]

        func command(for step: Step, on activity: Activity?) -> Command {
            let p = step.parameter
            let minutes = Duration.seconds(60 * (p % 120) - 1_800)
            switch step.command {
            case 0, 10:
                return .request(
                    .init(
                        activityType: "t",
                        attributes: JSONObject(["n": .number(JSONNumber(p))]),
                        content: ActivityContent(
                            contentState: JSONObject(["s": .string(String(repeating: "x", count: p * 5))]),
                            staleDate: p % 3 == 0 ? now + minutes : nil
                        ),
                        startDate: p % 4 == 0 ? now + .seconds(p * 10) : nil,
                        deviceID: p % 5 < 2 ? Self.devices[p % 2] : nil,
                        timestamp: p % 2 == 0 ? now : nil
                    )
                )
            case 1:
                return .update(
                    .init(
                        content: ActivityContent(
                            contentState: JSONObject(["step": .number(JSONNumber(p))]),
                            staleDate: p % 3 == 0 ? now + minutes : nil
                        ),
                        alert: p % 7 == 0 ? Alert(title: "t", body: "b") : nil,
                        priority: [nil, .low, .high][p % 3],
                        timestamp: p % 2 == 0 ? now - .seconds(p % 600) : nil
                    )
                )
            case 2:
                let dismissal: DismissalPolicy = [.immediate, .default, .after(now + minutes * 10)][p % 3]
                return .end(.init(dismissal: dismissal, timestamp: p % 4 == 0 ? now - .seconds(p) : nil))
            case 3: return .dismiss(.userRemoved)
            case 4: return .registerPushToken("token-\(p % 3)")
            case 5: return .start
            case 6: return .markStale
            case 7: return .end(.init(dismissal: .default, reason: .lifetimeExceeded))
            case 8: return .dismiss(.deadline)
            case 9:
                let accepted = now - .seconds(p % 1_200)
                return .flagUnconfirmedStart(
                    UnconfirmedStart(
                        pushToStartToken: "start-\(p % 2)",
                        acceptedAt: accepted,
                        tokenDueBy: accepted + .seconds(600),
                        unconfirmedInARow: 1 + p % 4,
                        tokenSuspect: p % 4 == 3
                    )
                )
            default: return .update(.init(content: ActivityContent(contentState: .empty), priority: .high))
            }
        }

        mutating func run(_ step: Step) {
            now = now + .seconds(step.secondsLater % 10 == 0 ? step.secondsLater : step.secondsLater % 60)
            if step.parameter % 3 == 0 {
                for index in activities.indices { runWorker(on: index) }
            }
            let index = step.activity
            let before = activities[index]
            let command = command(for: step, on: before)
            var device = 0
            if case .request(let request) = command, let id = request.deviceID { device = deviceOpen[id, default: 0] }
            let context = DecisionContext(
                app: rules,
                globalMaxOpen: 1_000,
                open: OpenCounts(app: openCount, global: openCount, device: device)
            )
            do {
                apply(try lifecycle.decide(command, for: before, at: now, context: context), to: index)
            } catch {
                rejections[error.code, default: 0] += 1
            }
        }

        mutating func runWorker(on index: Int) {
            guard let activity = activities[index] else { return }
            apply(lifecycle.applyDueDeadlines(to: activity, at: now).1, to: index)
        }

        mutating func apply(_ events: [ActivityEvent], to index: Int) {
            var activity = activities[index]
            for event in events {
                let wasOpen = activity?.state.isOpen ?? false
                do {
                    activity = try lifecycle.evolve(activity, with: event)
                } catch {
                    Issue.record("decide produced an illegal event: \(error.reason), \(event)")
                    return
                }
                let isOpen = activity!.state.isOpen
                if isOpen != wasOpen {
                    openCount += isOpen ? 1 : -1
                    if let device = activity?.deviceID { deviceOpen[device, default: 0] += isOpen ? 1 : -1 }
                }
            }
            activities[index] = activity
            streams[index] += events
        }
    }

    static var shortPolicy: LifecyclePolicy {
        var policy = LifecyclePolicy()
        policy.activeLifetime = .seconds(3 * 3600)
        policy.dismissalWindow = .seconds(3600)
        return policy
    }

    @Test("decisions only ever produce events that strict replay accepts, and fold(events) equals the decided state")
    func foldEqualsDecisions() async {
        await checkProperty(count: 300, input: Self.steps) { steps in
            var world = World(policy: Self.shortPolicy)
            for step in steps { world.run(step) }
            for (index, stream) in world.streams.enumerated() {
                let id = StreamID(app: AppID(rawValue: "app")!, activity: ActivityID(rawValue: "a\(index)")!)
                let folded = try world.lifecycle.fold(stream, of: id)
                #expect(folded == world.activities[index])
                // Deterministic: folding again gives the same state.
                #expect(try world.lifecycle.fold(stream, of: id) == folded)
            }
        }
    }

    @Test("versions are contiguous from 1 and events never go back in time")
    func contiguousVersions() async {
        await checkProperty(count: 300, input: Self.steps) { steps in
            var world = World(policy: Self.shortPolicy)
            for step in steps { world.run(step) }
            for stream in world.streams {
                #expect(stream.map(\.version) == stream.indices.map { $0 + 1 })
                #expect(zip(stream, stream.dropFirst()).allSatisfy { $0.occurredAt <= $1.occurredAt })
            }
        }
    }

    @Test("open-count bookkeeping never goes negative, matches the open activities, and respects the caps")
    func openCounts() async {
        await checkProperty(count: 300, input: Self.steps) { steps in
            var world = World(policy: Self.shortPolicy)
            for step in steps {
                world.run(step)
                let open = world.activities.filter { $0?.state.isOpen == true }.count
                #expect(world.openCount >= 0)
                #expect(world.openCount == open)
                #expect(open <= world.rules.maxOpen)
                #expect(world.deviceOpen.values.allSatisfy { $0 >= 0 && $0 <= 2 })
            }
        }
    }

    @Test("with deadlines applied, no activity is open past its lifetime nor ended past its dismissal window")
    func deadlinesHonoured() async {
        await checkProperty(count: 300, input: Self.steps) { steps in
            var world = World(policy: Self.shortPolicy)
            let policy = Self.shortPolicy
            for step in steps {
                world.run(step)
                for index in world.activities.indices { world.runWorker(on: index) }
                for activity in world.activities.compactMap({ $0 }) {
                    if activity.state.isOpen, let activatedAt = activity.activatedAt {
                        #expect(world.now - activatedAt < policy.activeLifetime)
                    }
                    if activity.state == .ended, let endedAt = activity.endedAt {
                        #expect(world.now - endedAt < policy.dismissalWindow)
                    }
                    if let endedAt = activity.endedAt, let activatedAt = activity.activatedAt {
                        #expect(endedAt - activatedAt <= policy.activeLifetime)
                    }
                    if let dismissedAt = activity.dismissedAt, let endedAt = activity.endedAt {
                        #expect(dismissedAt - endedAt <= policy.dismissalWindow)
                    }
                }
            }
        }
    }

    @Test("no illegal state is reachable: every state carries what it must")
    func statesAreWellFormed() async {
        await checkProperty(count: 300, input: Self.steps) { steps in
            var world = World(policy: Self.shortPolicy)
            for step in steps { world.run(step) }
            for activity in world.activities.compactMap({ $0 }) {
                switch activity.state {
                case .pending:
                    #expect(activity.activatedAt == nil && activity.startDate != nil)
                case .active, .stale:
                    #expect(activity.activatedAt != nil && activity.endedAt == nil)
                case .ended:
                    #expect(activity.endedAt != nil && activity.dismissalDate != nil && activity.dismissedAt == nil)
                case .dismissed:
                    #expect(activity.dismissedAt != nil)
                }
                #expect(activity.payloadSize <= world.lifecycle.policy.maximumPayloadSize)
                #expect(activity.recentHighPriorityUpdates.count <= world.rules.priorityBudgetPerHour)
            }
        }
    }

    @Test("the random sequences reach every state and meet every rejection of the rules")
    func generatorExploresTheMachine() async {
        var states: Set<ActivityState> = []
        var codes: Set<String> = []
        await checkProperty(count: 1000, input: Self.steps) { steps in
            var world = World(policy: Self.shortPolicy)
            for step in steps {
                world.run(step)
                states.formUnion(world.activities.compactMap { $0?.state })
            }
            codes.formUnion(world.rejections.keys)
        }
        #expect(states == Set(ActivityState.allCases))
        for code in [
            "activity_not_found", "activity_exists", "activity_ended", "activity_dismissed", "outdated_update",
            "target_maximum_exceeded", "device_maximum_exceeded", "push_budget_exhausted", "invalid_transition",
            "not_due",
        ] {
            #expect(codes.contains(code), "never met \(code)")
        }
    }

    @Test("regression: a late `mark stale` while the lifetime was already due ends the activity at its lifetime first")
    func lateMarkStaleAfterLifetime() throws {
        // The shrunk input property testing found.
        let steps = [
            Step(command: 0, activity: 0, secondsLater: 0, parameter: 0),
            Step(command: 0, activity: 0, secondsLater: 2_070, parameter: 0),
            Step(command: 0, activity: 0, secondsLater: 4_420, parameter: 0),
            Step(command: 1, activity: 0, secondsLater: 0, parameter: 351),
            Step(command: 6, activity: 0, secondsLater: 4_990, parameter: 1),
        ]
        var world = World(policy: Self.shortPolicy)
        for step in steps { world.run(step) }
        let activity = try #require(world.activities[0])
        #expect(activity.state == .ended)
        #expect(activity.endedAt == activity.activatedAt.map { $0 + Self.shortPolicy.activeLifetime })
        #expect(world.streams[0].last?.type == .ended)
    }
}

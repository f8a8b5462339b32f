import ActivityLifecycle
import Benchmark
import CanonicalJSON

/// Throughput of the state machine: strict folding of stored streams (what replay and verify
/// do per event) and deciding commands (what every API call does once).
let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        scalingFactor: .kilo,
        maxDuration: .seconds(5),
        maxIterations: 2_000
    )
    let lifecycle = Lifecycle()
    let streams = Workload.streams(count: 2_000, lifecycle: lifecycle)
    let events = streams.flatMap { $0 }

    // One iteration folds one event; throughput is events per second.
    Benchmark("fold: evolve with strict checks (events/s)") { benchmark in
        var activity: Activity?
        for index in benchmark.scaledIterations {
            let event = events[index % events.count]
            if event.version == 1 { activity = nil }
            activity = try lifecycle.evolve(activity, with: event)
        }
        blackHole(activity)
    }

    // One iteration decides one update on an active activity and folds its event.
    Benchmark("decide: update an active activity (commands/s)") { benchmark in
        let context = Workload.context(lifecycle)
        var activity = try lifecycle.evolve(nil, with: streams[0][0])
        var now = activity.lastEventAt
        for index in benchmark.scaledIterations {
            now = now + .milliseconds(10)
            let command = Command.update(
                .init(content: ActivityContent(contentState: Workload.content(index)), priority: .low)
            )
            for event in try lifecycle.decide(command, for: activity, at: now, context: context) {
                activity = try lifecycle.evolve(activity, with: event)
            }
            if activity.state != .active {
                activity = try lifecycle.evolve(nil, with: streams[0][0])
                now = activity.lastEventAt
            }
        }
        blackHole(activity)
    }
}

/// Realistic streams: request, updates every few minutes (some with alerts and stale dates),
/// a push token, going stale, an end and the dismissal — produced by `decide` itself.
enum Workload {
    static func context(_ lifecycle: Lifecycle) -> DecisionContext {
        DecisionContext(
            app: AppRules(defaultsOf: lifecycle.policy),
            globalMaxOpen: lifecycle.policy.defaultGlobalMaxOpen,
            open: OpenCounts(app: 0, global: 0)
        )
    }

    static func content(_ step: Int) -> JSONObject {
        JSONObject([
            "status": .string(["preparing", "on the way", "nearby", "delivered"][step % 4]),
            "etaMinutes": .number(JSONNumber(step % 45)),
            "courier": .object(["name": .string("Sam"), "rating": .number(4.9)]),
        ])
    }

    static func streams(count: Int, lifecycle: Lifecycle) -> [[ActivityEvent]] {
        let context = context(lifecycle)
        let start = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)
        return (0..<count).map { stream in
            var now = start + .seconds(stream)
            var activity: Activity?
            var events: [ActivityEvent] = []
            func send(_ command: Command) {
                let produced = try! lifecycle.decide(command, for: activity, at: now, context: context)
                activity = try! produced.reduce(activity) { try lifecycle.evolve($0, with: $1) }
                events += produced
            }
            send(
                .request(
                    .init(
                        activityType: "delivery",
                        attributes: JSONObject(["order": .string("A-\(stream)")]),
                        content: ActivityContent(contentState: content(0), staleDate: now + .seconds(900))
                    )
                )
            )
            send(.registerPushToken("token-\(stream)"))
            for step in 1...20 {
                now = now + .seconds(180)
                send(
                    .update(
                        .init(
                            content: ActivityContent(contentState: content(step), staleDate: now + .seconds(900)),
                            alert: step % 5 == 0 ? Alert(title: "Update", body: "Step \(step)") : nil,
                            priority: step % 3 == 0 ? .high : .low,
                            timestamp: now
                        )
                    )
                )
            }
            now = now + .seconds(1_200)
            send(.update(.init(content: ActivityContent(contentState: content(21)), priority: .low)))
            send(.end(.init(dismissal: .immediate)))
            return events
        }
    }
}

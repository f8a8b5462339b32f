import ActivityLifecycle
import CanonicalJSON

/// One activity's life under test: a simulated clock, the activity as decided so far, and its
/// events. Every accepted decision is folded with `evolve`, so an illegal event fails the test.
struct Timeline {
    var lifecycle: Lifecycle
    var now: Timestamp
    var activity: Activity?
    var events: [ActivityEvent] = []
    var context: DecisionContext

    static let start = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)

    init(policy: LifecyclePolicy = .standard, now: Timestamp = Timeline.start, app: AppRules? = nil) {
        lifecycle = Lifecycle(policy: policy)
        self.now = now
        context = DecisionContext(
            app: app ?? AppRules(defaultsOf: policy),
            globalMaxOpen: policy.defaultGlobalMaxOpen,
            open: OpenCounts(app: 0, global: 0)
        )
    }

    var state: ActivityState? { activity?.state }

    mutating func advance(_ duration: Duration) {
        now = now + duration
    }

    /// Decides `command` now; on success appends and folds the events and returns them.
    @discardableResult
    mutating func send(_ command: Command) throws(Rejection) -> [ActivityEvent] {
        let produced = try lifecycle.decide(command, for: activity, at: now, context: context)
        absorb(produced)
        return produced
    }

    /// What the deadline worker does: applies every deadline due by now.
    @discardableResult
    mutating func applyDeadlines() -> [ActivityEvent] {
        guard let activity else { return [] }
        let (_, produced) = lifecycle.applyDueDeadlines(to: activity, at: now)
        absorb(produced)
        return produced
    }

    private mutating func absorb(_ produced: [ActivityEvent]) {
        for event in produced {
            do {
                activity = try lifecycle.evolve(activity, with: event)
            } catch {
                preconditionFailure("decide produced an illegal event: \(error) in \(event)")
            }
        }
        events += produced
    }

    /// The rejection `command` meets now, or `nil` when it is accepted (and applied).
    mutating func rejection(of command: Command) -> Rejection? {
        do {
            try send(command)
            return nil
        } catch {
            return error
        }
    }
}

/// Content helpers.
func content(_ step: Double = 1, staleDate: Timestamp? = nil, relevance: Double? = nil) -> ActivityContent {
    ActivityContent(
        contentState: JSONObject(["step": .number(JSONNumber(step))]),
        staleDate: staleDate,
        relevanceScore: relevance.flatMap(RelevanceScore.init)
    )
}

/// Commands with test defaults.
enum Make {
    static func request(
        staleDate: Timestamp? = nil,
        startDate: Timestamp? = nil,
        attributes: JSONObject = JSONObject(["order": .string("A-1")]),
        deviceID: DeviceID? = nil,
        timestamp: Timestamp? = nil
    ) -> Command {
        .request(
            .init(
                activityType: "delivery",
                attributes: attributes,
                content: content(staleDate: staleDate),
                startDate: startDate,
                deviceID: deviceID,
                timestamp: timestamp
            )
        )
    }

    static func update(
        _ step: Double = 2,
        staleDate: Timestamp? = nil,
        alert: Alert? = nil,
        priority: Priority? = nil,
        timestamp: Timestamp? = nil
    ) -> Command {
        .update(
            .init(content: content(step, staleDate: staleDate), alert: alert, priority: priority, timestamp: timestamp)
        )
    }

    static func end(
        _ dismissal: DismissalPolicy = .default,
        content: ActivityContent? = nil,
        timestamp: Timestamp? = nil
    ) -> Command {
        .end(.init(content: content, dismissal: dismissal, timestamp: timestamp))
    }
}

extension Duration {
    static func hours(_ hours: Int) -> Duration { .seconds(hours * 3600) }
    static func minutes(_ minutes: Int) -> Duration { .seconds(minutes * 60) }
}

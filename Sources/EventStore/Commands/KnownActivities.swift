import ActivityLifecycle
import Synchronization

/// What this process's writers know without loading it: each activity as the last batch that
/// loaded or wrote it left it, and each app's rules as last loaded, with the version of the app's
/// row they were read from. A batch decides a command on what is known, and skips the load, when
/// its app's rules are known and, but for an opening, its activity.
///
/// Nothing known is ever ahead of the database (it is remembered once its batch committed), but
/// it may be behind: another process, or the deadline worker, may have appended since, or an
/// admin changed the rules. So only an append is made on what is known, and it is guarded:
/// it expects the known version (an opening: that the activity does not exist), which an append
/// by anyone else since makes it refuse, and its statement checks that the rules' versions did
/// not change (`liveline_rules_unchanged`). An opening's caps are only ever decided by its
/// append, which counts under lock. A command that would not append (a no-op, a rejection) is
/// decided again on a fresh load, and so is one whose append was refused.
final class KnownActivities: Sendable {
    /// The rules commands of an app are decided under, and the version (`xmin`) of the app's row
    /// they were read from.
    struct Rules {
        /// A loaded context without what is not a rule: no open counts (an opening decided on
        /// known rules leaves its caps to the append) and no remote starts (a remote start is
        /// always loaded).
        let context: DecisionContext
        let version: Int64

        init(context: DecisionContext, version: Int64) {
            var context = context
            context.open = OpenCounts(app: 0, global: 0, device: 0)
            context.remoteStarts = []
            self.context = context
            self.version = version
        }
    }

    /// What a command can be decided on without a load.
    struct Known {
        /// `nil` for an opening of an activity this process does not know.
        let activity: StoredActivity?
        let rules: Rules
    }

    /// How many activities are kept at most; when full, the one remembered first is forgotten.
    let capacity: Int
    private let state: Mutex<State>

    private struct State {
        var activities: [StreamID: StoredActivity] = [:]
        /// The activities in the order they were first remembered, as a ring: the next slot to
        /// take holds the one to forget.
        var ring: [StreamID?]
        var next = 0
        var rules: [AppID: Rules] = [:]
    }

    init(capacity: Int = 10_000) {
        precondition(capacity > 0, "a cache of no activities")
        self.capacity = capacity
        self.state = Mutex(State(ring: Array(repeating: nil, count: capacity)))
    }

    /// What is known of each activity and its app; `nil` where the app's rules are not known,
    /// or the activity is not and the command on it does not open it (`opening`).
    func known(_ streams: [StreamID], opening: [Bool]) -> [Known?] {
        state.withLock { state in
            zip(streams, opening).map { stream, opening in
                guard let rules = state.rules[stream.app] else { return nil }
                let activity = state.activities[stream]
                return activity != nil || opening ? Known(activity: activity, rules: rules) : nil
            }
        }
    }

    /// Remembers activities as a committed batch or a load left them, and apps' rules as loaded.
    func remember(_ activities: [StoredActivity], rules: [AppID: Rules]) {
        state.withLock { state in
            state.rules.merge(rules) { $1 }
            for activity in activities {
                guard state.activities.updateValue(activity, forKey: activity.stream) == nil else { continue }
                if let oldest = state.ring[state.next], oldest != activity.stream {
                    state.activities[oldest] = nil
                }
                state.ring[state.next] = activity.stream
                state.next = (state.next + 1) % capacity
            }
        }
    }

    /// Forgets activities that may have changed without this process knowing (their append was
    /// refused).
    func forget(_ streams: [StreamID]) {
        state.withLock { state in
            for stream in streams { state.activities[stream] = nil }
        }
    }

    /// Forgets the rules of apps whose row changed since they were read.
    func forgetRules(of apps: some Sequence<AppID>) {
        state.withLock { state in
            for app in apps { state.rules[app] = nil }
        }
    }

    /// How many activities are known.
    var count: Int {
        state.withLock { $0.activities.count }
    }
}

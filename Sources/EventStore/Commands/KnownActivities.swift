import ActivityLifecycle
import Synchronization

/// What this process's writers know without loading it: each activity as the last batch that
/// loaded or wrote it left it, and each app's rules as last loaded, with the version of the app's
/// row they were read from. A batch decides a command on what is known, and skips the load, when
/// both its activity and its app's rules are known.
///
/// Nothing known is ever ahead of the database (it is remembered once its batch committed), but
/// it may be behind: another process, or the deadline worker, may have appended since, or an
/// admin changed the rules. So only an append is made on what is known, and it is guarded:
/// it expects the known version, which an append by anyone else since makes it refuse, and its
/// statement checks that the rules' versions did not change (`liveline_rules_unchanged`). A
/// command that would not append (a no-op, a rejection) is decided again on a fresh load, and
/// so is one whose append was refused.
final class KnownActivities: Sendable {
    /// The rules commands of an app are decided under: the context a load gives a command that
    /// opens nothing, and the version (`xmin`) of the app's row it was read from.
    struct Rules {
        let context: DecisionContext
        let version: Int64
    }

    /// What a command can be decided on without a load.
    struct Known {
        let activity: StoredActivity
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

    /// What is known of each activity and its app; `nil` where either is not.
    func known(_ streams: [StreamID]) -> [Known?] {
        state.withLock { state in
            streams.map { stream in
                guard let activity = state.activities[stream], let rules = state.rules[stream.app] else { return nil }
                return Known(activity: activity, rules: rules)
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

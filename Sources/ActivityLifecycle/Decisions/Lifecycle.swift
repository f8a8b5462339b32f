/// The one state machine of Liveline (SPEC §2): every path uses it — the API to decide what a
/// command does, the deadline worker to apply time, replay and verify to fold stored events.
///
/// Pure: no I/O, no clock. `decide` turns a command into events or a typed rejection;
/// `evolve` folds one event into the state and refuses any event the machine could not have
/// produced; `nextDeadline` says which time-driven transition comes next.
public struct Lifecycle: Hashable, Sendable {
    public var policy: LifecyclePolicy

    public init(policy: LifecyclePolicy = .standard) {
        self.policy = policy
    }
}

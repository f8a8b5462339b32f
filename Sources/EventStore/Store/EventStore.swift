public import ActivityLifecycle
public import Postgres

/// Liveline's storage: every command goes through one path — load the activity, `decide`,
/// append the events with the projection and the cap counts in one statement — and every SQL
/// statement of the product lives in this module.
public struct EventStore: Sendable {
    public let pool: ConnectionPool
    public let lifecycle: Lifecycle
    /// Told after every append, so that readers waiting for events wake up.
    public let notifier: AppendNotifier?

    public init(pool: ConnectionPool, lifecycle: Lifecycle, notifier: AppendNotifier? = nil) {
        self.pool = pool
        self.lifecycle = lifecycle
        self.notifier = notifier
    }
}

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

extension EventStore {
    /// Runs `attempt` again (up to three times in all) when the database broke a deadlock or a
    /// serialization conflict by rolling it back: nothing of it was written or acknowledged, so
    /// deciding it again on the current state is safe. `attempt` is a whole transaction.
    static func retryingDeadlocks<T>(_ attempt: () throws -> T) throws -> T {
        for _ in 1..<3 {
            do {
                return try attempt()
            } catch let error as PostgresError where error.isSerializationFailure {
                continue
            }
        }
        return try attempt()
    }
}

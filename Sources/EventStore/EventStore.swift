public import ActivityLifecycle
public import Postgres

/// Liveline's storage: every command goes through one path — load the activity, `decide`,
/// append the events with the projection and the cap counts in one step — and commands that
/// arrive together take it together, in one transaction (`CommandQueue`).
///
/// The store is sorted by feature: `Commands/` (the command path and the one append step),
/// `Reading/` (readers and the live feed), `LogStreams/` (the log stream by stream, for verify
/// and replay), `CapHistory/` (openings, closings and cap changes in commit order), `Replay/`
/// (rebuilding the projection), `Apps/` (apps, keys, the admin audit trail), `Deliveries/`
/// (what delivery records, and the shards' leases), `Deadlines/` (the deadline worker),
/// `Retention/` (partitions, retirement), `Schema/` (migrations); each keeps its SQL beside the
/// code that runs it. `Rows/` maps the log's and the projection's columns for all of them.
///
/// Database failures leave the store as `EventStoreError`s: callers never see `PostgresError`.
public struct EventStore: Sendable {
    /// The connections the store borrows; no module above the store reaches them (its SQL is
    /// all here).
    let pool: ConnectionPool
    public let lifecycle: Lifecycle
    /// Told after every append, so that readers waiting for events wake up.
    public let notifier: AppendNotifier?
    /// Where commands wait for a writer.
    let commands: CommandQueue
    /// The database's name, for the spans of commits.
    let databaseName: String?

    /// A request was refused because the database cannot be reached (the store threw
    /// `EventStoreError.databaseUnavailable`): counted in the outage, which is logged once when
    /// it begins and once when it ends, with the requests refused meanwhile.
    public func refusedWhileUnreachable(_ details: String) {
        pool.outage.refused(details)
    }

    /// - Parameters:
    ///   - pool: the database's connections, set up by the process that owns them.
    ///   - writers: how many of the pool's connections may run batches of commands at once;
    ///     by default a quarter of them (at least one). Fewer writers make larger batches.
    public init(pool: ConnectionPool, lifecycle: Lifecycle, notifier: AppendNotifier? = nil, writers: Int? = nil) {
        self.pool = pool
        self.lifecycle = lifecycle
        self.notifier = notifier
        self.databaseName = ConnectionString.database(in: pool.configuration.connectionString)
        self.commands = CommandQueue(
            pool: pool,
            lifecycle: lifecycle,
            notifier: notifier,
            writers: writers ?? max(1, pool.configuration.maximumConnections / 4)
        )
    }

    /// Runs `body` on a pooled connection, on the pool's own thread; a database failure
    /// becomes an `EventStoreError`.
    func withConnection<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await EventStoreError.sealing { try await pool.withConnection(body) }
    }

    /// `withConnection`, in a transaction that commits when `body` returns.
    func withTransaction<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await EventStoreError.sealing { try await pool.withTransaction(body) }
    }

    /// Runs `attempt` again (up to three times in all) when the database broke a deadlock or a
    /// serialization conflict by rolling it back, or when `alsoRetrying` says so of the error:
    /// nothing of it was written or acknowledged, so deciding it again on the current state is
    /// safe. `attempt` is a whole transaction.
    static func retryingDeadlocks<T>(
        alsoRetrying: (PostgresError) -> Bool = { _ in false },
        _ attempt: () throws -> T
    ) throws -> T {
        for _ in 1..<3 {
            do {
                return try attempt()
            } catch let error as PostgresError where error.isSerializationFailure || alsoRetrying(error) {
                continue
            }
        }
        return try attempt()
    }
}

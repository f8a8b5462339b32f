public import Postgres
public import ServiceLifecycle

/// Tells every Liveline process that events were appended, with `NOTIFY liveline_events` from a
/// pooled session — never from the appending transaction, whose commit would then take
/// PostgreSQL's global notification lock and queue behind every other appender's. Run it as a
/// `Service`.
///
/// A notification is a transaction of its own, so under load one per append would add a commit
/// to every append. Instead the first append after a quiet spell is announced at once,
/// and the appends that follow within `minimumInterval` share the next notification. Its commit
/// does not wait for the WAL flush (`synchronous_commit` off for that transaction): it records
/// nothing, and a crash drops every listener's session anyway.
public final class AppendNotifier: Service, Sendable {
    /// The channel readers of the log listen on.
    public static let channel = "liveline_events"

    private let pool: ConnectionPool
    private let minimumInterval: Duration
    private let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation

    /// - Parameter minimumInterval: the least time between two notifications: how long a waiting
    ///   reader may hear of an append late, at most.
    public init(pool: ConnectionPool, minimumInterval: Duration = .milliseconds(10)) {
        self.pool = pool
        self.minimumInterval = minimumInterval
        (signals, signal) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Called after a commit that appended events; returns at once.
    public func eventsAppended() {
        signal.yield()
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            for await _ in signals {
                // A lost notification only delays readers until their next look; never fail for it.
                _ = try? await pool.withConnection {
                    try $0.execute(
                        "SELECT set_config('synchronous_commit', 'off', true), pg_notify('liveline_events', '')"
                    )
                }
                // Appends meanwhile are buffered as one signal, answered after the pause.
                try? await Task.sleep(for: minimumInterval)
            }
        } onGracefulShutdown: {
            self.signal.finish()
        }
    }
}

public import Postgres
public import ServiceLifecycle

/// Tells every Liveline process that events were appended, with `NOTIFY liveline_events` from a
/// pooled session — never from the appending transaction, whose commit would then take
/// PostgreSQL's global notification lock and queue behind every other appender's. Bursts of
/// appends become one notification. Run it as a `Service`.
public final class AppendNotifier: Service, Sendable {
    /// The channel readers of the log listen on.
    public static let channel = "liveline_events"

    private let pool: ConnectionPool
    private let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation

    public init(pool: ConnectionPool) {
        self.pool = pool
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
                _ = try? await pool.withConnection { try $0.execute("SELECT pg_notify('liveline_events', '')") }
            }
        } onGracefulShutdown: {
            self.signal.finish()
        }
    }
}

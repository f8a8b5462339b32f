public import Logging
import Postgres
public import ServiceLifecycle

/// Hears that events were appended by any Liveline process (the `AppendNotifier`'s `NOTIFY`),
/// that an app's APNs credentials changed, and that a widget or control reload was requested, from a database session and a thread of its own,
/// and wakes the readers, the deadline worker and the delivery worker waiting for that. A wake-up means "look now", never "this is everything": a
/// notification can be lost when the session breaks (it is reopened, and every waiter woken).
/// Run it as a `Service`.
public struct AppendListener: Service, Sendable {
    /// The channel a change of any app's APNs credentials is announced on (at the commit that
    /// made it), so that every process's delivery reads it at once.
    public static let credentialsChannel = "liveline_credentials"
    /// The channel a widget or control reload request is announced on (at its commit), so that
    /// the workers fan it out at once.
    public static let reloadsChannel = "liveline_reloads"

    private let listener: NotificationListener

    /// - Throws: `EventStoreError.databaseFailure` when the connection string cannot be parsed.
    public init(connectionString: String, logger: Logger) throws {
        do {
            listener = try NotificationListener(
                connectionString: connectionString,
                channels: [AppendNotifier.channel, Self.credentialsChannel, Self.reloadsChannel],
                logger: logger
            )
        } catch let error as PostgresError {
            throw EventStoreError(error)
        }
    }

    public func run() async throws {
        try await listener.run()
    }

    /// How many times appends were announced (or the session reopened) so far.
    public var generation: UInt64 { listener.generation(of: AppendNotifier.channel) }

    /// How many times credentials changes were announced (or the session reopened) so far.
    public var credentialsGeneration: UInt64 { listener.generation(of: Self.credentialsChannel) }

    /// Waits until a change of credentials is announced after `generation`, or `timeout`
    /// passes, or the task is cancelled; returns the generation then.
    @discardableResult
    public func waitForCredentials(after generation: UInt64, timeout: Duration) async -> UInt64 {
        await listener.wait(on: Self.credentialsChannel, after: generation, timeout: timeout)
    }

    /// How many times reload requests were announced (or the session reopened) so far.
    public var reloadsGeneration: UInt64 { listener.generation(of: Self.reloadsChannel) }

    /// Waits until a reload request is announced after `generation`, or `timeout` passes, or
    /// the task is cancelled; returns the generation then.
    @discardableResult
    public func waitForReloads(after generation: UInt64, timeout: Duration) async -> UInt64 {
        await listener.wait(on: Self.reloadsChannel, after: generation, timeout: timeout)
    }

    /// Whether the session is listening (it may still be connecting, or reconnecting).
    public var isListening: Bool { listener.isListening }

    /// Waits until appends are announced after `generation`, or `timeout` passes, or the task
    /// is cancelled; returns the generation then.
    @discardableResult
    public func wait(after generation: UInt64, timeout: Duration) async -> UInt64 {
        await listener.wait(on: AppendNotifier.channel, after: generation, timeout: timeout)
    }
}

import Foundation
public import Logging
import NIOPosix
public import ServiceLifecycle
import Synchronization

/// Listens on PostgreSQL notification channels from a session of its own, on a thread of its
/// own, and wakes the tasks waiting on a channel.
///
/// Each channel has a generation that every notification on it advances; a waiter says which
/// generation it has seen and sleeps until a later one (or a timeout). When the session breaks
/// it is reopened, and every channel's generation advances once, since notifications sent
/// meanwhile are lost: a wake-up means "look now", never "this is everything". Run it as a
/// `Service`.
public final class NotificationListener: Service, Sendable {
    private struct Waiter {
        let channel: String
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var generations: [String: UInt64] = [:]
        var waiters: [Int: Waiter] = [:]
        var nextID = 0
        var isStopped = false
        var isListening = false
    }

    private let connectionString: String
    private let channels: [String]
    private let logger: Logger
    private let thread = NIOThreadPool(numberOfThreads: 1)
    private let state = Mutex(State())

    public init(connectionString: String, channels: [String], logger: Logger) throws {
        try ConnectionString.validate(connectionString)
        self.connectionString = connectionString
        self.channels = channels
        self.logger = logger
    }

    /// How many times `channel` has been notified (or the session reopened) so far.
    public func generation(of channel: String) -> UInt64 {
        state.withLock { $0.generations[channel, default: 0] }
    }

    /// Whether the session is listening (it may still be connecting, or reconnecting).
    public var isListening: Bool { state.withLock { $0.isListening } }

    /// Waits until `channel` is notified after `generation`, or `timeout` passes, or the task is
    /// cancelled; returns the channel's generation then.
    @discardableResult
    public func wait(on channel: String, after generation: UInt64, timeout: Duration) async -> UInt64 {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        // Under the lock that `onCancel` takes too: a task cancelled before it got
                        // here would otherwise wait with no one left to wake it.
                        let waiting = self.state.withLock { state in
                            guard state.generations[channel, default: 0] <= generation, !state.isStopped,
                                !Task.isCancelled
                            else {
                                return false
                            }
                            state.waiters[id] = Waiter(channel: channel, continuation: continuation)
                            return true
                        }
                        if !waiting { continuation.resume() }
                    }
                } onCancel: {
                    self.state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume()
                }
            }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
        return self.generation(of: channel)
    }

    public func run() async throws {
        thread.start()
        await withTaskCancellationHandler {
            await withGracefulShutdownHandler {
                _ = try? await thread.runIfActive { self.listen() }
            } onGracefulShutdown: {
                self.stop()
            }
        } onCancel: {
            self.stop()
        }
        try? await thread.shutdownGracefully()
    }

    /// Stops listening and wakes every waiter.
    private func stop() {
        let waiters = state.withLock { state in
            state.isStopped = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.continuation.resume() }
    }

    private var isStopped: Bool { state.withLock { $0.isStopped } }

    /// The blocking loop, on the listener's thread: connect, listen, deliver; reconnect on failure.
    private func listen() {
        while !isStopped {
            do {
                let connection = try Connection.connect(connectionString)
                for channel in channels { try connection.listen(channel) }
                state.withLock { $0.isListening = true }
                logger.debug("listening for notifications", metadata: ["channels": "\(channels)"])
                for channel in channels { advance(channel) }
                while !isStopped {
                    for notification in try connection.waitForNotifications(timeout: .milliseconds(200)) {
                        advance(notification.channel)
                    }
                }
            } catch {
                state.withLock { $0.isListening = false }
                logger.debug(
                    "notification session lost; reconnecting",
                    metadata: ["error": "\(String(reflecting: error))"]
                )
                for _ in 0..<5 where !isStopped { usleep(100_000) }
            }
        }
    }

    private func advance(_ channel: String) {
        let waiters = state.withLock { state in
            state.generations[channel, default: 0] += 1
            let woken = state.waiters.filter { $0.value.channel == channel }
            for id in woken.keys { state.waiters.removeValue(forKey: id) }
            return Array(woken.values)
        }
        for waiter in waiters { waiter.continuation.resume() }
    }
}

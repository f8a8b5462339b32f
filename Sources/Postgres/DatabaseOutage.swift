import Logging
import Synchronization

/// Says once that the database cannot be reached, counts the requests refused meanwhile, and
/// says once when it can be reached again (after how long, how many refused): an outage is two
/// lines in the log however busy the server is, not one per request.
///
/// The pool reports what it sees (a connection that cannot be opened, a session that answered);
/// whoever refuses work for want of the database reports that too.
public final class DatabaseOutage: Sendable {
    private struct Outage {
        let since: ContinuousClock.Instant
        var refused = 0
    }

    private let logger: Logger
    /// Read without the lock on every answered statement: `true` only during an outage.
    private let isDown = Atomic(false)
    private let outage = Mutex<Outage?>(nil)

    init(logger: Logger) {
        self.logger = logger
    }

    /// Whether an outage is going on.
    public var isOngoing: Bool { isDown.load(ordering: .acquiring) }

    /// The database could not be reached; an outage begins unless one is going on.
    func unreachable(_ reason: @autoclosure () -> String) {
        let began = outage.withLock { outage in
            guard outage == nil else { return false }
            outage = Outage(since: .now)
            isDown.store(true, ordering: .releasing)
            return true
        }
        if began {
            logger.warning(
                "the database cannot be reached: what needs it is refused until it can; its end will be logged",
                metadata: ["error": "\(reason())"]
            )
        }
    }

    /// A request was refused because the database could not be reached.
    public func refused(_ reason: @autoclosure () -> String) {
        unreachable(reason())
        outage.withLock { $0?.refused += 1 }
    }

    /// The database answered: an outage going on ends.
    func reached() {
        guard isOngoing else { return }
        let ended = outage.withLock { outage in
            defer {
                outage = nil
                isDown.store(false, ordering: .releasing)
            }
            return outage
        }
        guard let ended else { return }
        let seconds = ((ContinuousClock.now - ended.since) / .milliseconds(100)).rounded() / 10
        logger.notice(
            "the database can be reached again",
            metadata: ["outage_seconds": "\(seconds)", "requests_refused": "\(ended.refused)"]
        )
    }
}

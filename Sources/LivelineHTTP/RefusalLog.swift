import Logging
import Synchronization

/// Logs a failure that refuses requests in bursts, thousands a second, as at most one line a
/// minute: the first refusal at once, then the next one a minute on, with how many were refused
/// in between. The operator learns of it at once, and the log is not buried under it.
final class RefusalLog: Sendable {
    private struct State {
        var lastLine: ContinuousClock.Instant?
        var refusedSince = 0
    }

    private let logger: Logger
    private let message: Logger.Message
    private let interval: Duration
    private let state = Mutex(State())

    init(logger: Logger, message: Logger.Message, interval: Duration = .seconds(60)) {
        self.logger = logger
        self.message = message
        self.interval = interval
    }

    /// A request was refused for this failure; `reason` says what the database said.
    func refused(_ reason: @autoclosure () -> String) {
        let now = ContinuousClock.now
        let refusedBefore: Int? = state.withLock { state in
            state.refusedSince += 1
            if let lastLine = state.lastLine, now - lastLine < interval { return nil }
            defer {
                state.lastLine = now
                state.refusedSince = 0
            }
            return state.refusedSince - 1
        }
        guard let refusedBefore else { return }
        logger.error(
            message,
            metadata: [
                "error": "\(reason())",
                "refused_since_last_line": "\(refusedBefore)",
                "next_line": "after \(interval) at the soonest",
            ]
        )
    }
}

public import CanonicalJSON

/// How one device's widget (or control) reloads are paced: WidgetKit budgets each widget's
/// reloads (typically 40–70 a day) and withholds those over budget while APNs still answers 200,
/// so a device is sent at most one reload per `interval`. A request inside the interval is
/// coalesced into one reload sent when the interval ends, which carries the newest request: the
/// last change is never lost, and never sent twice. At most one reload of a slot is on its way
/// at a time; a request meanwhile waits for it. A plain value: the worker keeps it with the
/// slot's token and applies what it decides.
public struct ReloadPacing: Hashable, Sendable {
    /// A reload on its way to APNs: the request it carries and which attempt this is.
    public struct Sending: Hashable, Sendable {
        public let reload: Int64
        public let attempt: Int

        public init(reload: Int64, attempt: Int) {
            self.reload = reload
            self.attempt = attempt
        }
    }

    /// A reload waiting for its time: a request coalesced (attempt 0), or one to be tried again
    /// (the attempts it had).
    public struct Due: Hashable, Sendable {
        public let reload: Int64
        public let attempt: Int
        public let at: Timestamp

        public init(reload: Int64, attempt: Int, at: Timestamp) {
            self.reload = reload
            self.attempt = attempt
            self.at = at
        }
    }

    public enum Decision: Hashable, Sendable {
        /// Send it now.
        case send(Sending)
        /// It rides on the reload due then.
        case coalesce(until: Timestamp)
    }

    /// When a reload last left for the device.
    public var lastSentAt: Timestamp?
    public var due: Due?
    public var sending: Sending?

    public init(lastSentAt: Timestamp? = nil, due: Due? = nil, sending: Sending? = nil) {
        self.lastSentAt = lastSentAt
        self.due = due
        self.sending = sending
    }

    /// A request for a reload (`reload`, the request's id) at `now`, with the app's interval
    /// for the kind (zero: no pacing).
    public mutating func request(_ reload: Int64, at now: Timestamp, interval: Duration) -> Decision {
        if let waiting = due {
            due = Due(reload: reload, attempt: 0, at: waiting.at)
            return .coalesce(until: waiting.at)
        }
        let nextAllowed = lastSentAt.map { $0 + interval } ?? now
        if sending != nil || (interval > .zero && now < nextAllowed) {
            let at = max(now, nextAllowed)
            due = Due(reload: reload, attempt: 0, at: at)
            return .coalesce(until: at)
        }
        return .send(start(Sending(reload: reload, attempt: 1), at: now))
    }

    /// The reload due by `now`, which leaves now; `nil` when none is due (or one is on its way).
    public mutating func takeDue(at now: Timestamp) -> Sending? {
        guard sending == nil, let waiting = due, waiting.at <= now else { return nil }
        due = nil
        return start(Sending(reload: waiting.reload, attempt: waiting.attempt + 1), at: now)
    }

    /// APNs answered the reload on its way: it is done, or it is tried again at `retryAt` — unless
    /// a newer request waits already, which the next reload carries anyway.
    public mutating func settle(retryAt: Timestamp?) {
        guard let sent = sending else { return }
        sending = nil
        if let retryAt, due == nil {
            due = Due(reload: sent.reload, attempt: sent.attempt, at: retryAt)
        }
    }

    private mutating func start(_ reload: Sending, at now: Timestamp) -> Sending {
        lastSentAt = now
        sending = reload
        return reload
    }
}

public import ActivityLifecycle
public import CanonicalJSON

/// One reload to send: to the slot's token, carrying the request `reload`, its `attempt`-th try.
public struct ReloadSend: Hashable, Sendable {
    public let slot: ReloadTokenSlot
    public let token: String
    public let reload: Int64
    public let attempt: Int

    public init(slot: ReloadTokenSlot, token: String, reload: Int64, attempt: Int) {
        self.slot = slot
        self.token = token
        self.reload = reload
        self.attempt = attempt
    }
}

/// What a worker took from its shards: the reloads to send now, when the next one waiting is
/// due, and whether a fan-out has more devices than it took.
public struct ReloadWork: Sendable {
    public let sends: [ReloadSend]
    public let nextDue: Timestamp?
    public let moreWaiting: Bool

    public init(sends: [ReloadSend], nextDue: Timestamp?, moreWaiting: Bool) {
        self.sends = sends
        self.nextDue = nextDue
        self.moreWaiting = moreWaiting
    }
}

/// What became of a reload sent (or held), to record: a row of `reload_deliveries`, and what the
/// slot's pacing does next.
public struct ReloadOutcome: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        case delivered
        /// Tried again at `retryAt`.
        case retrying
        case failed
        /// APNs declared the token dead: it is no longer the slot's (unless registered after).
        case tokenInvalidated = "token_invalidated"
        /// APNs refused the app's credentials: held until they change (`retryAt`: at once then).
        case appSuspended = "app_suspended"
        /// The app has no credentials: held until it has.
        case noCredentials = "no_credentials"
        /// The device had a reload within its interval: the request rides on the next one.
        case coalesced
    }

    public let send: ReloadSend
    public let kind: Kind
    /// When the slot's reload goes again (a retry, or a hold); `nil` when it is settled.
    public let retryAt: Timestamp?
    public let apnsID: String?
    public let priority: Priority?
    public let status: Int?
    public let reason: String?
    public let latency: Duration?
    public let attemptedAt: Timestamp
    /// For a dead token: since when APNs holds it dead.
    public let invalidSince: Timestamp?

    public init(
        send: ReloadSend,
        kind: Kind,
        retryAt: Timestamp? = nil,
        apnsID: String? = nil,
        priority: Priority? = nil,
        status: Int? = nil,
        reason: String? = nil,
        latency: Duration? = nil,
        attemptedAt: Timestamp,
        invalidSince: Timestamp? = nil
    ) {
        self.send = send
        self.kind = kind
        self.retryAt = retryAt
        self.apnsID = apnsID
        self.priority = priority
        self.status = status
        self.reason = reason
        self.latency = latency
        self.attemptedAt = attemptedAt
        self.invalidSince = invalidSince
    }
}

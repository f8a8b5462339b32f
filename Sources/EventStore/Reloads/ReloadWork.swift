public import ActivityLifecycle
public import CanonicalJSON

/// One reload to send: to the slot's token, carrying the request `reload`, its `attempt`-th try.
public struct ReloadSend: Hashable, Sendable {
    /// Where a reload to send was found: its slot's due time (a request coalesced, or a retry),
    /// which stays written until the answer is recorded, or a page of a fan-out.
    public enum Origin: Hashable, Sendable {
        case due
        case fanout
    }

    public let slot: ReloadTokenSlot
    public let token: String
    public let reload: Int64
    public let attempt: Int
    public let origin: Origin

    public init(slot: ReloadTokenSlot, token: String, reload: Int64, attempt: Int, origin: Origin = .due) {
        self.slot = slot
        self.token = token
        self.reload = reload
        self.attempt = attempt
        self.origin = origin
    }
}

/// A request's devices in one delivery shard, walked in device order from a cursor.
public struct ReloadFanout: Hashable, Sendable {
    /// How far a fan-out is read or recorded: past a device, or to its end.
    public enum Position: Hashable, Sendable {
        case after(String)
        case end
    }

    public let reload: Int64
    public let shard: Int

    public init(reload: Int64, shard: Int) {
        self.reload = reload
        self.shard = shard
    }
}

/// A page of a fan-out taken: the reloads it sends (its other devices were coalesced, or had the
/// request already), and where the fan-out's cursor goes once they are recorded.
public struct ReloadPage: Hashable, Sendable {
    public let fanout: ReloadFanout
    public let sends: [ReloadSend]
    public let through: ReloadFanout.Position

    public init(fanout: ReloadFanout, sends: [ReloadSend], through: ReloadFanout.Position) {
        self.fanout = fanout
        self.sends = sends
        self.through = through
    }
}

/// A reload its worker has on its way: nothing of it is written until its answer is, so the worker
/// tells the store, which paces the slot's next requests behind it.
public struct ReloadOnItsWay: Hashable, Sendable {
    public let sending: ReloadPacing.Sending
    public let sentAt: Timestamp

    public init(_ sending: ReloadPacing.Sending, sentAt: Timestamp) {
        self.sending = sending
        self.sentAt = sentAt
    }
}

/// What a worker took from its shards: the reloads due now, the fan-outs' pages, when the next
/// reload waiting is due, and whether more wait than it took.
public struct ReloadWork: Sendable {
    public let due: [ReloadSend]
    public let pages: [ReloadPage]
    public let nextDue: Timestamp?
    public let moreWaiting: Bool

    public init(due: [ReloadSend], pages: [ReloadPage], nextDue: Timestamp?, moreWaiting: Bool) {
        self.due = due
        self.pages = pages
        self.nextDue = nextDue
        self.moreWaiting = moreWaiting
    }

    /// Every reload to send.
    public var sends: [ReloadSend] { due + pages.flatMap(\.sends) }
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

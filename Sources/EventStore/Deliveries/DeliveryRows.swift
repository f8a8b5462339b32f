public import ActivityLifecycle
public import CanonicalJSON

/// A token APNs declared dead, to record.
public struct TokenInvalidation: Hashable, Sendable {
    public let stream: StreamID
    public var deviceToken: String
    public let position: Int64
    public let status: Int
    public let reason: String
    public let since: Timestamp
    /// Set when the token is a push-to-start token (a remote start's), with `deviceToken` as it
    /// was registered: its invalidation is a change of that slot's token, not of the activity's.
    public var pushToStart: PushToStartSlot?

    public init(
        stream: StreamID,
        deviceToken: String,
        position: Int64,
        status: Int,
        reason: String,
        since: Timestamp,
        pushToStart: PushToStartSlot? = nil
    ) {
        self.stream = stream
        self.deviceToken = deviceToken
        self.position = position
        self.status = status
        self.reason = reason
        self.since = since
        self.pushToStart = pushToStart
    }
}

/// What APNs said of a dead token, as recorded.
public struct TokenDeath: Hashable, Sendable {
    /// The token as the invalidation names it.
    public let token: String
    public let status: Int
    public let reason: String
    /// Since when APNs holds it dead (its timestamp, or the time of its answer).
    public let invalidSince: Timestamp
    /// When Liveline recorded it.
    public let recordedAt: Timestamp

    public init(token: String, status: Int, reason: String, invalidSince: Timestamp, recordedAt: Timestamp) {
        self.token = token
        self.status = status
        self.reason = reason
        self.invalidSince = invalidSince
        self.recordedAt = recordedAt
    }
}

/// An app whose credentials APNs refused, to record.
public struct Suspension: Hashable, Sendable {
    public let app: AppID
    public let status: Int
    public let reason: String
    public let credentialsUpdatedAt: Timestamp

    public init(app: AppID, status: Int, reason: String, credentialsUpdatedAt: Timestamp) {
        self.app = app
        self.status = status
        self.reason = reason
        self.credentialsUpdatedAt = credentialsUpdatedAt
    }
}

/// A push held while its app was suspended: a row of `delivery_holds`.
public struct Hold: Hashable, Sendable {
    public let stream: StreamID
    public let position: Int64
    public let startsActivity: Bool
    /// As read back by a worker that takes the hold over: a start offered again after its app
    /// resumed, whose worker stopped while it was under way (APNs may have received it).
    public var underWay: Bool

    public init(stream: StreamID, position: Int64, startsActivity: Bool, underWay: Bool = false) {
        self.stream = stream
        self.position = position
        self.startsActivity = startsActivity
        self.underWay = underWay
    }
}

/// One held push's row.
public struct HoldKey: Hashable, Sendable {
    public let stream: StreamID
    public let position: Int64

    public init(stream: StreamID, position: Int64) {
        self.stream = stream
        self.position = position
    }
}

/// What a delivery worker records at once, in one transaction: outcomes, dead tokens,
/// suspensions, and the held pushes written and released.
public struct DeliveryWrites: Sendable {
    public var records: [DeliveryRecord]
    public var invalidations: [TokenInvalidation]
    public var suspensions: [Suspension]
    public var held: [Hold]
    public var released: [HoldKey]
    /// Widget reloads the settled events asked for.
    public var reloads: [ActivityReload]
    /// Remote starts APNs accepted, whose devices are to confirm them.
    public var acceptedStarts: [AcceptedStart]

    public init(
        records: [DeliveryRecord] = [],
        invalidations: [TokenInvalidation] = [],
        suspensions: [Suspension] = [],
        held: [Hold] = [],
        released: [HoldKey] = [],
        reloads: [ActivityReload] = [],
        acceptedStarts: [AcceptedStart] = []
    ) {
        self.records = records
        self.invalidations = invalidations
        self.suspensions = suspensions
        self.held = held
        self.released = released
        self.reloads = reloads
        self.acceptedStarts = acceptedStarts
    }
}

/// Events of one stream to load: versions after `afterVersion`, at positions up to
/// `throughPosition`, in order.
public struct HistoryRequest: Hashable, Sendable {
    public let afterVersion: Int
    public let throughPosition: Int64

    public init(afterVersion: Int, throughPosition: Int64) {
        self.afterVersion = afterVersion
        self.throughPosition = throughPosition
    }

    /// From the stream's first event.
    public var isWhole: Bool { afterVersion == 0 }
}

/// What was loaded for history requests: each stream's events in version order, and the tokens
/// APNs declared dead for those streams.
public struct StreamHistories: Sendable {
    public var events: [StreamID: [StoredEvent]] = [:]
    public var invalidations: [StreamID: [String: Timestamp]] = [:]

    public init() {}
}

/// What delivering an app's pushes needs from the database: its bundle id, when its
/// credentials were set, and the credentials its latest suspension names.
public struct AppDeliverySettings: Hashable, Sendable {
    public let bundleID: String
    public let credentialsUpdatedAt: Timestamp?
    public let suspendedCredentials: Timestamp?
}

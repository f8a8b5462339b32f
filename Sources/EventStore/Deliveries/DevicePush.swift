public import ActivityLifecycle
public import CanonicalJSON

/// One push a device was sent, or a decision about one: a Live Activity push of one of its
/// activities, or a widget or control reload. What support reads first ("what did this phone
/// get?").
public struct DevicePush: Hashable, Sendable {
    public enum Source: Hashable, Sendable {
        /// A push of the activity's event `version` (a push-to-start, an update, an end).
        case activity(ActivityID, version: Int)
        /// A reload, of request `reload`.
        case reload(Int64, ReloadKind)
    }

    public let source: Source
    /// As the tables record it (`delivered`, `coalesced`, `awaiting_token`, …).
    public let outcome: String
    public let attempt: Int
    public let apnsID: String?
    public let deviceToken: String?
    public let channelID: String?
    public let priority: Priority?
    public let status: Int?
    public let reason: String?
    public let latency: Duration?
    public let attemptedAt: Timestamp

    public init(
        source: Source,
        outcome: String,
        attempt: Int,
        apnsID: String?,
        deviceToken: String?,
        channelID: String?,
        priority: Priority?,
        status: Int?,
        reason: String?,
        latency: Duration?,
        attemptedAt: Timestamp
    ) {
        self.source = source
        self.outcome = outcome
        self.attempt = attempt
        self.apnsID = apnsID
        self.deviceToken = deviceToken
        self.channelID = channelID
        self.priority = priority
        self.status = status
        self.reason = reason
        self.latency = latency
        self.attemptedAt = attemptedAt
    }
}

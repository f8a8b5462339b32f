public import ActivityLifecycle
public import CanonicalJSON

/// One row of `deliveries`: an attempt to send a push, or a decision not to send one.
public struct DeliveryRecord: Hashable, Sendable {
    public enum Outcome: String, Hashable, Sendable, CaseIterable {
        /// APNs took it (200).
        case delivered
        /// No answer, or an answer worth trying again after a backoff.
        case retrying
        /// It can never be sent as it is, or it ran out of time (its expiration).
        case failed
        /// APNs said the token is dead; nothing more goes to it until it is registered again.
        case tokenInvalidated = "token_invalidated"
        /// APNs refused the app's credentials or topic; its pushes wait for new credentials.
        case appSuspended = "app_suspended"
        /// Newer content for the same activity came before this was sent (latest wins).
        case superseded
        /// The activity has no push token yet; its newest content goes when one is registered.
        case awaitingToken = "awaiting_token"
        /// The app has no APNs credentials.
        case noCredentials = "no_credentials"
        /// The push cannot be rendered for APNs (too large, a token that is not hex).
        case undeliverable
        /// Its expiration passed before it could be sent.
        case expired
        /// A push-to-start about to be sent, recorded before it goes: a worker that takes over
        /// after a crash finds it and never sends the start again (its delivery then fails).
        case sending

        /// Whether the event's delivery is settled by it (everything but `retrying` and
        /// `sending`).
        public var isFinal: Bool { self != .retrying && self != .sending }
    }

    public let position: Int64
    public let stream: StreamID
    public let version: Int
    public let outcome: Outcome
    /// 1, 2, … for requests sent; 0 for a decision without one.
    public let attempt: Int
    public let apnsID: String?
    public let deviceToken: String?
    /// The event that registered `deviceToken`, when it is the activity's push token (recorded in
    /// its place; a push-to-start's token is recorded as it is).
    public let tokenPosition: Int64?
    /// The channel of a broadcast.
    public let channelID: String?
    public let priority: Priority?
    public let status: Int?
    public let reason: String?
    /// From the request's start to the answer.
    public let latency: Duration?
    public let attemptedAt: Timestamp

    public init(
        position: Int64,
        stream: StreamID,
        version: Int,
        outcome: Outcome,
        attempt: Int = 0,
        apnsID: String? = nil,
        deviceToken: String? = nil,
        tokenPosition: Int64? = nil,
        channelID: String? = nil,
        priority: Priority? = nil,
        status: Int? = nil,
        reason: String? = nil,
        latency: Duration? = nil,
        attemptedAt: Timestamp
    ) {
        self.position = position
        self.stream = stream
        self.version = version
        self.outcome = outcome
        self.attempt = attempt
        self.apnsID = apnsID
        self.deviceToken = deviceToken
        self.tokenPosition = tokenPosition
        self.channelID = channelID
        self.priority = priority
        self.status = status
        self.reason = reason
        self.latency = latency
        self.attemptedAt = attemptedAt
    }
}

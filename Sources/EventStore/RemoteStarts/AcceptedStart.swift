public import ActivityLifecycle
public import CanonicalJSON

/// A remote start APNs accepted (its 200), recorded with its outcome so that the deadline worker
/// can tell, once the start confirmation window has run out, whether the device confirmed it.
public struct AcceptedStart: Hashable, Sendable {
    public let stream: StreamID
    /// The start's event.
    public let position: Int64
    /// The push-to-start token it went to.
    public let token: String
    public let acceptedAt: Timestamp

    public init(stream: StreamID, position: Int64, token: String, acceptedAt: Timestamp) {
        self.stream = stream
        self.position = position
        self.token = token
        self.acceptedAt = acceptedAt
    }
}

/// What became of a remote start once its window ran out.
public enum StartVerdict: String, Hashable, Sendable, CaseIterable {
    /// The activity's push token came: the device showed it.
    case confirmed
    /// No push token came: recorded as `activity.start_unconfirmed`.
    case unconfirmed
    /// The activity was dismissed first, without a token: no verdict.
    case dismissed
}

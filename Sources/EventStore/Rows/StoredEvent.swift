public import ActivityLifecycle
public import CanonicalJSON

/// An event as stored in the log: its global position and when it was recorded.
public struct StoredEvent: Hashable, Sendable {
    /// Strictly increasing along the log; see `EventStore.events(after:)`.
    public let position: Int64
    public let stream: StreamID
    public let event: ActivityEvent
    /// When the writing transaction ran.
    public let recordedAt: Timestamp

    public init(position: Int64, stream: StreamID, event: ActivityEvent, recordedAt: Timestamp) {
        self.position = position
        self.stream = stream
        self.event = event
        self.recordedAt = recordedAt
    }
}

/// An activity as projected: its state and its next time-driven transition.
public struct StoredActivity: Hashable, Sendable {
    public let stream: StreamID
    public let activity: Activity
    public let nextDeadline: Deadline?

    public init(stream: StreamID, activity: Activity, nextDeadline: Deadline?) {
        self.stream = stream
        self.activity = activity
        self.nextDeadline = nextDeadline
    }
}

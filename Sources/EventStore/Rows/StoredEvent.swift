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
    /// The trace context of the sampled request that appended it, when it was read with it
    /// (`EventStore.events(after:limit:withTraceContexts:)`).
    public let traceContext: TraceContext?

    public init(
        position: Int64,
        stream: StreamID,
        event: ActivityEvent,
        recordedAt: Timestamp,
        traceContext: TraceContext? = nil
    ) {
        self.position = position
        self.stream = stream
        self.event = event
        self.recordedAt = recordedAt
        self.traceContext = traceContext
    }

    /// The same event, with the trace context kept with it.
    func traced(_ context: TraceContext?) -> StoredEvent {
        StoredEvent(position: position, stream: stream, event: event, recordedAt: recordedAt, traceContext: context)
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

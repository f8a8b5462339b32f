public import ActivityLifecycle
public import CanonicalJSON

/// Where a page of activities ends: the last one's request time and id.
public struct ActivityCursor: Hashable, Sendable {
    public let requestedAt: Timestamp
    public let activityID: ActivityID

    public init(requestedAt: Timestamp, activityID: ActivityID) {
        self.requestedAt = requestedAt
        self.activityID = activityID
    }

    init(_ stored: StoredActivity) {
        self.init(requestedAt: stored.activity.requestedAt, activityID: stored.stream.activity)
    }
}

public struct ActivityPage: Hashable, Sendable {
    public let activities: [StoredActivity]
    /// The cursor of the next page, or `nil` on the last one.
    public let next: ActivityCursor?
}

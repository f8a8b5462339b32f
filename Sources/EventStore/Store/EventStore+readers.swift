public import ActivityLifecycle
public import Postgres

extension EventStore {
    /// The activity's projection, or `nil`.
    public func activity(_ stream: StreamID) async throws -> StoredActivity? {
        try await pool.withConnection { try StoreQueries.activity(stream, $0) }
    }

    /// The activity's whole stream, in version order.
    public func events(of stream: StreamID) async throws -> [StoredEvent] {
        try await pool.withConnection { try StoreQueries.events(of: stream, throughVersion: .max, $0) }
    }

    /// Events after `position`, in position order, at most `limit`, of one app or of all.
    ///
    /// Only the part of the log that is final is read: positions below the oldest transaction
    /// still running. An event that commits later always gets a larger position than any
    /// returned now, so a reader that pages forward from the last position it saw never misses
    /// one — however writers' commits interleave.
    public func events(after position: Int64, app: AppID? = nil, limit: Int) async throws -> [StoredEvent] {
        try await pool.withConnection { connection in
            if let app {
                try StoreQueries.events(after: position, app: app, limit: limit, connection)
            } else {
                try StoreQueries.events(after: position, limit: limit, connection)
            }
        }
    }

    /// Events after `position`, as `events(after:app:limit:)`, waiting up to `timeout` when there
    /// are none yet: woken by the `AppendNotifier` of any process through `listener`, and looking
    /// again at least every second anyway, since the readable part of the log also grows when a
    /// transaction that held it back ends, which notifies no one.
    public func events(
        after position: Int64,
        app: AppID? = nil,
        limit: Int,
        waitingUpTo timeout: Duration,
        listener: NotificationListener
    ) async throws -> [StoredEvent] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let generation = listener.generation(of: AppendNotifier.channel)
            let events = try await events(after: position, app: app, limit: limit)
            let remaining = deadline - ContinuousClock.now
            guard events.isEmpty, remaining > .zero, !Task.isCancelled else { return events }
            await listener.wait(on: AppendNotifier.channel, after: generation, timeout: min(remaining, .seconds(1)))
        }
    }

    /// An app's activities, newest first, optionally in one state, a page at a time.
    ///
    /// - Parameter cursor: `nil` for the first page; then the `next` of the previous page.
    public func activities(
        of app: AppID,
        in state: ActivityState? = nil,
        limit: Int,
        after cursor: ActivityCursor? = nil
    ) async throws -> ActivityPage {
        try await pool.withConnection { connection in
            let rows = try StoreQueries.activities(of: app, in: state, limit: limit + 1, after: cursor, connection)
            let page = Array(rows.prefix(limit))
            let next = rows.count > limit ? page.last.map(ActivityCursor.init) : nil
            return ActivityPage(activities: page, next: next)
        }
    }

    /// The projections of these activities (those that have one), in no particular order.
    public func activities(_ streams: [StreamID]) async throws -> [StoredActivity] {
        try await pool.withConnection { try StoreQueries.activities(streams, $0) }
    }

    /// Projection rows whose activity has no event at all (at most `limit`): a projection that
    /// the log does not explain.
    public func projectionsWithoutEvents(limit: Int) async throws -> [StreamID] {
        try await pool.withConnection { try StoreQueries.projectionsWithoutEvents(limit: limit, $0) }
    }

    /// How many activities of all apps are in each open state.
    public func openActivitiesByState() async throws -> [ActivityState: Int] {
        try await pool.withConnection { try StoreQueries.openActivitiesByState($0) }
    }

    /// Refused commands of an app (or of one of its activities), newest first.
    public func rejections(
        of app: AppID,
        activity: ActivityID? = nil,
        code: String? = nil,
        limit: Int
    ) async throws -> [RecordedRejection] {
        try await pool.withConnection {
            try StoreQueries.rejections(of: app, activity: activity, code: code, limit: limit, $0)
        }
    }
}

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

/// A refused command, as recorded.
public struct RecordedRejection: Hashable, Sendable {
    public let app: AppID
    public let activity: String?
    public let command: String
    public let code: String
    public let details: [String: JSONValue]
    public let occurredAt: Timestamp
}

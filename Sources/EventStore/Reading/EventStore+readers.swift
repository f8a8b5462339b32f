public import ActivityLifecycle

extension EventStore {
    /// The activity's projection, or `nil`.
    public func activity(_ stream: StreamID) async throws -> StoredActivity? {
        try await withConnection { try ReadingQueries.activity(stream, $0) }
    }

    /// The activity's whole stream, in version order.
    public func events(of stream: StreamID) async throws -> [StoredEvent] {
        try await withConnection { try ReadingQueries.events(of: stream, throughVersion: .max, $0) }
    }

    /// The activity's events of these types only, in version order: what a reader needs of a
    /// long stream without reading all of it.
    package func events(of stream: StreamID, types: [EventType]) async throws -> [StoredEvent] {
        try await withConnection { try ReadingQueries.events(of: stream, types: types, $0) }
    }

    /// Events after `position`, in position order, at most `limit`, of one app or of all.
    ///
    /// Only the part of the log that is final is read: positions below the oldest transaction
    /// still running. An event that commits later always gets a larger position than any
    /// returned now, so a reader that pages forward from the last position it saw never misses
    /// one — however writers' commits interleave.
    public func events(after position: Int64, app: AppID? = nil, limit: Int) async throws -> [StoredEvent] {
        try await withConnection { try ReadingQueries.events(after: position, app: app, limit: limit, $0) }
    }

    /// The position of the newest event in the log: 0 when the log is empty. A reader's
    /// position above it was not read from this log.
    public func lastPosition() async throws -> Int64 {
        try await withConnection { try ReadingQueries.lastPosition($0) }
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
        try await withConnection { connection in
            let rows = try ReadingQueries.activities(of: app, in: state, limit: limit + 1, after: cursor, connection)
            let page = Array(rows.prefix(limit))
            let next = rows.count > limit ? page.last.map(ActivityCursor.init) : nil
            return ActivityPage(activities: page, next: next)
        }
    }

    /// The projections of these activities (those that have one), in no particular order.
    public func activities(_ streams: [StreamID]) async throws -> [StoredActivity] {
        try await withConnection { try ReadingQueries.activities(streams, $0) }
    }

    /// Projection rows whose activity has no event at all (at most `limit`): a projection that
    /// the log does not explain.
    public func projectionsWithoutEvents(limit: Int) async throws -> [StreamID] {
        try await withConnection { try ReadingQueries.projectionsWithoutEvents(limit: limit, $0) }
    }

    /// How many activities of all apps are in each open state.
    public func openActivitiesByState() async throws -> [ActivityState: Int] {
        try await withConnection { try ReadingQueries.openActivitiesByState($0) }
    }

    /// Refused commands of an app (or of one of its activities), newest first.
    public func rejections(
        of app: AppID,
        activity: ActivityID? = nil,
        code: String? = nil,
        limit: Int
    ) async throws -> [RecordedRejection] {
        try await withConnection {
            try ReadingQueries.rejections(of: app, activity: activity, code: code, limit: limit, $0)
        }
    }
}

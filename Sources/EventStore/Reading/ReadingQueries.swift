import ActivityLifecycle
import CanonicalJSON
import Foundation
import Postgres

/// The SQL of the readers: activities, pages of them, the log by stream and by position,
/// rejections, and the counts `/metrics` shows.
enum ReadingQueries {
    static func activity(_ stream: StreamID, _ connection: Connection) throws -> StoredActivity? {
        try connection.query(
            """
            SELECT * FROM liveline_activity_rows
            WHERE app_id = \(stream.app.rawValue) AND activity_id = \(stream.activity.rawValue)
            """
        ).single.flatMap { try ProjectionRow.stored(from: $0, at: 0) }
    }

    static func activities(_ streams: [StreamID], _ connection: Connection) throws -> [StoredActivity] {
        try connection.query(
            """
            SELECT r.* FROM liveline_activity_rows r
            JOIN unnest(\(PostgresArray(streams.map(\.app.rawValue))), \(PostgresArray(streams.map(\.activity.rawValue))))
                AS wanted(app_id, activity_id)
              ON r.app_id = wanted.app_id AND r.activity_id = wanted.activity_id
            """
        ).compactMap { try ProjectionRow.stored(from: $0, at: 0) }
    }

    static func activities(
        of app: AppID,
        in state: ActivityState?,
        limit: Int,
        after cursor: ActivityCursor?,
        _ connection: Connection
    ) throws -> [StoredActivity] {
        // Newest first; the cursor is the (requested_at, activity_id) of the last row seen.
        let after = cursor.map { PostgresTimestamp($0.requestedAt) }
        let afterID = cursor?.activityID.rawValue
        let rows: PostgresRows =
            if let state {
                try connection.query(
                    """
                    SELECT * FROM liveline_activity_rows p
                    WHERE p.app_id = \(app.rawValue) AND p.state = \(state.rawValue)
                      AND (\(after)::timestamptz IS NULL OR (p.requested_at, p.activity_id) < (\(after), \(afterID)))
                    ORDER BY p.requested_at DESC, p.activity_id DESC LIMIT \(limit)
                    """
                )
            } else {
                try connection.query(
                    """
                    SELECT * FROM liveline_activity_rows p
                    WHERE p.app_id = \(app.rawValue)
                      AND (\(after)::timestamptz IS NULL OR (p.requested_at, p.activity_id) < (\(after), \(afterID)))
                    ORDER BY p.requested_at DESC, p.activity_id DESC LIMIT \(limit)
                    """
                )
            }
        return try rows.compactMap { try ProjectionRow.stored(from: $0, at: 0) }
    }

    static func projectionsWithoutEvents(limit: Int, _ connection: Connection) throws -> [StreamID] {
        try connection.query(
            """
            SELECT a.app_id, a.activity_id FROM activities a
            WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.app_id = a.app_id AND e.activity_id = a.activity_id)
            ORDER BY a.app_id, a.activity_id LIMIT \(limit)
            """
        ).map { row in
            StreamID(
                app: AppID(uncheckedRawValue: try row.decode("app_id")),
                activity: ActivityID(uncheckedRawValue: try row.decode("activity_id"))
            )
        }
    }

    static func events(
        of stream: StreamID,
        throughVersion version: Int,
        _ connection: Connection
    ) throws -> [StoredEvent] {
        try connection.query(
            """
            SELECT \(columnsOf: EventRow.Column.self)
            FROM events
            WHERE app_id = \(stream.app.rawValue) AND activity_id = \(stream.activity.rawValue) AND version <= \(Int32(clamping: version))
            ORDER BY version
            """
        ).map(EventRow.storedEvent)
    }

    /// The stream's events of `types` only, in version order.
    static func events(of stream: StreamID, types: [EventType], _ connection: Connection) throws -> [StoredEvent] {
        try connection.query(
            """
            SELECT \(columnsOf: EventRow.Column.self)
            FROM events
            WHERE app_id = \(stream.app.rawValue) AND activity_id = \(stream.activity.rawValue)
                AND type = ANY (\(PostgresArray(types.map(\.rawValue))))
            ORDER BY version
            """
        ).map(EventRow.storedEvent)
    }

    /// The log's events after `position` and below the stable position, in order, only `app`'s
    /// when given (`liveline_events_after`, whose plans are made once per session).
    static func events(
        after position: Int64,
        app: AppID?,
        limit: Int,
        _ connection: Connection
    ) throws
        -> [StoredEvent]
    {
        try connection.query(
            """
            SELECT \(columnsOf: EventRow.Column.self)
            FROM liveline_events_after(\(position), \(limit), \(app?.rawValue))
            """
        ).map(EventRow.storedEvent)
    }

    static func lastPosition(_ connection: Connection) throws -> Int64 {
        try connection.query("SELECT coalesce(max(position), 0)::bigint AS last FROM events").single?.decode("last")
            ?? 0
    }

    static func rejections(
        of app: AppID,
        activity: ActivityID?,
        code: String?,
        limit: Int,
        _ connection: Connection
    ) throws -> [RecordedRejection] {
        try connection.query(
            """
            SELECT activity_id, command, code, details, occurred_at FROM rejections
            WHERE app_id = \(app.rawValue) AND (\(code)::text IS NULL OR code = \(code))
              AND (\(activity?.rawValue)::text IS NULL OR activity_id = \(activity?.rawValue))
            ORDER BY occurred_at DESC, id DESC LIMIT \(limit)
            """
        ).map { row in
            RecordedRejection(
                app: app,
                activity: try row.decode("activity_id"),
                command: try row.decode("command"),
                code: try row.decode("code"),
                details: try details(row.decode("details", as: JSONB.self)),
                occurredAt: Timestamp(try row.decode("occurred_at", as: PostgresTimestamp.self))
            )
        }
    }

    static func openActivitiesByState(_ connection: Connection) throws -> [ActivityState: Int] {
        var counts: [ActivityState: Int] = [:]
        for row in try connection.query(
            """
            SELECT state::text AS state, count(*) AS activities FROM activities
            WHERE state IN ('pending', 'active', 'stale') GROUP BY state
            """
        ) {
            guard let state = ActivityState(rawValue: try row.decode("state")) else { continue }
            counts[state] = try row.decode("activities")
        }
        return counts
    }

    /// A rejection's recorded `details` (an object, as `liveline_append_batch` wrote it).
    private static func details(_ json: JSONB) throws -> [String: JSONValue] {
        do {
            return try JSONParser.parseObject(json.utf8).members
        } catch {
            throw EventStoreError.unreadableRow("rejections: details: \(error)")
        }
    }
}

import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of reading the log stream by stream (`StreamCursor`), for `liveline verify` and
/// `liveline replay`: the cursor `liveline_log_events` over every event, or over some streams,
/// in stream and version order. `app` is `nil` for the whole log, or one app's id.
enum LogCursorQueries {
    /// Opens `liveline_log_events` on the log, stream by stream, in version order.
    static func openCursorOnLog(app: AppID?, _ connection: Connection) throws {
        try connection.execute(
            """
            DECLARE liveline_log_events NO SCROLL CURSOR FOR
            SELECT \(columnsOf: EventRow.Column.self)
            FROM events WHERE \(app?.rawValue)::text IS NULL OR app_id = \(app?.rawValue)
            ORDER BY app_id, activity_id, version
            """
        )
    }

    /// Opens `liveline_log_events` on the whole of `streams`.
    static func openCursor(on streams: [StreamID], _ connection: Connection) throws {
        try connection.execute(
            """
            DECLARE liveline_log_events NO SCROLL CURSOR FOR
            SELECT \(columnsOf: EventRow.Column.self)
            FROM unnest(\(PostgresArray(streams.map(\.app.rawValue))), \(PostgresArray(streams.map(\.activity.rawValue))))
                AS s(app_id, activity_id)
            JOIN events e USING (app_id, activity_id)
            ORDER BY app_id, activity_id, version
            """
        )
    }

    static func fetch(_ count: Int) -> PostgresQuery {
        "FETCH \(literal: count) FROM liveline_log_events"
    }

    static func closeCursor(_ connection: Connection) throws {
        try connection.executeScript("CLOSE liveline_log_events")
    }
}

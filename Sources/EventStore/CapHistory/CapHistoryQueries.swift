import ActivityLifecycle
import CanonicalJSON
import Postgres

/// A cap change from the audit trail (`admin_changes`), with the limit it replaced.
struct RecordedCapChange {
    let entry: CapHistoryEntry
    /// The limit before; meaningless when `creation` (the app did not exist).
    let previous: Int?
    /// Whether this is the app's creation, which sets its caps for the first time.
    let creation: Bool
}

/// The SQL of the cap history that `liveline verify` replays: openings and closings from the
/// event log, cap changes from the audit trail, each placed by its transaction's commit time.
enum CapHistoryQueries {
    static func recordsCommitTimestamps(_ connection: Connection) throws -> Bool {
        try connection.query("SELECT current_setting('track_commit_timestamp')::boolean").single!.decode(0)
    }

    /// Every recorded change of a cap, in commit order (changes without a commit time first).
    static func capChanges(_ connection: Connection) throws -> [RecordedCapChange] {
        try connection.query(
            """
            SELECT pg_xact_commit_timestamp(c.transaction_id::xid) AS committed_at, c.app_id::text, s.setting,
                   c.action = 'app.created' AS creation,
                   CASE WHEN c.action = 'app.created' THEN NULL ELSE (s.value ->> 'from')::integer END AS previous,
                   (CASE WHEN c.action = 'app.created' THEN s.value ELSE s.value -> 'to' END #>> '{}')::integer AS limit
            FROM admin_changes c CROSS JOIN LATERAL jsonb_each(c.details) AS s(setting, value)
            WHERE c.action IN ('app.created', 'app.updated', 'limits.updated')
              AND s.setting IN ('maxOpen', 'maxOpenPerDevice', 'globalMaxOpen')
            ORDER BY 1 NULLS FIRST, c.id
            """
        ).map { row in
            let app = try row.decode("app_id", as: String?.self).map(AppID.init(uncheckedRawValue:))
            let cap: CapHistoryEntry.Cap =
                switch (try row.decode("setting", as: String.self), app) {
                case ("maxOpen", let app?): .app(app)
                case ("maxOpenPerDevice", let app?): .perDevice(app)
                default: .global
                }
            return RecordedCapChange(
                entry: CapHistoryEntry(
                    committedAt: try row.decode("committed_at", as: PostgresTimestamp?.self).map(Timestamp.init),
                    change: .capSet(cap, limit: try row.decode("limit", as: Int32?.self).map(Int.init))
                ),
                previous: try row.decode("previous", as: Int32?.self).map(Int.init),
                creation: try row.decode("creation")
            )
        }
    }

    /// Each cap's limit before its first recorded change: today's limits with `changes` undone,
    /// newest first. These entries have no commit time: they hold from the start.
    static func limitsBeforeChanges(
        _ changes: [RecordedCapChange],
        _ connection: Connection
    ) throws
        -> [CapHistoryEntry]
    {
        var limits: [CapHistoryEntry.Cap: Int?] = [:]
        let global = try connection.query("SELECT global_max_open FROM service_limits").single!.decode(
            0,
            as: Int32.self
        )
        limits.updateValue(Int(global), forKey: .global)
        for row in try connection.query("SELECT app_id::text, max_open, max_open_per_device FROM apps ORDER BY app_id")
        {
            let app = AppID(uncheckedRawValue: try row.decode("app_id"))
            limits.updateValue(Int(try row.decode("max_open", as: Int32.self)), forKey: .app(app))
            limits.updateValue(
                try row.decode("max_open_per_device", as: Int32?.self).map(Int.init),
                forKey: .perDevice(app)
            )
        }
        for change in changes.reversed() where !change.creation {
            guard case .capSet(let cap, _) = change.entry.change else { continue }
            limits.updateValue(change.previous, forKey: cap)
        }
        return limits.sorted { "\($0.key)" < "\($1.key)" }.map {
            CapHistoryEntry(committedAt: nil, change: .capSet($0.key, limit: $0.value))
        }
    }

    /// Opens `liveline_cap_history` on every opening (a stream's first event) and closing (its
    /// first `ended` or `dismissed`), in commit order, those without a commit time first.
    static func openCursorOnOpeningsAndClosings(_ connection: Connection) throws {
        try connection.execute(
            """
            DECLARE liveline_cap_history NO SCROLL CURSOR FOR
            SELECT \(columnsOf: CapMoveColumn.self)
            FROM (
                SELECT transaction_id, position, app_id::text, activity_id::text, data ->> 'deviceId' AS device_id,
                       true AS opens
                FROM events WHERE version = 1
                UNION ALL
                SELECT * FROM (
                    SELECT DISTINCT ON (app_id, activity_id) transaction_id, position, app_id::text, activity_id::text,
                           NULL::text, false
                    FROM events WHERE type IN ('activity.ended', 'activity.dismissed')
                    ORDER BY app_id, activity_id, version
                ) AS closings
            ) AS moves
            ORDER BY committed_at NULLS FIRST, transaction_id, position
            """
        )
    }

    /// The columns of `liveline_cap_history`: many rows are read from it, each by position.
    enum CapMoveColumn: Int, SQLColumns {
        case committedAt, app, activity, device, opens

        var sql: StaticString {
            switch self {
            case .committedAt: "pg_xact_commit_timestamp(transaction_id::xid) AS committed_at"
            case .app: "app_id"
            case .activity: "activity_id"
            case .device: "device_id"
            case .opens: "opens"
            }
        }
    }

    static func fetch(_ count: Int, _ connection: Connection) throws -> [CapHistoryEntry] {
        try connection.query("FETCH \(literal: count) FROM liveline_cap_history").map { row in
            let stream = StreamID(
                app: AppID(uncheckedRawValue: try row.decode(CapMoveColumn.app)),
                activity: ActivityID(uncheckedRawValue: try row.decode(CapMoveColumn.activity))
            )
            return CapHistoryEntry(
                committedAt: try row.decode(CapMoveColumn.committedAt, as: PostgresTimestamp?.self).map(Timestamp.init),
                change: try row.decode(CapMoveColumn.opens)
                    ? .opened(
                        stream,
                        device: try row.decode(CapMoveColumn.device, as: String?.self).map(
                            DeviceID.init(uncheckedRawValue:)
                        )
                    )
                    : .closed(stream)
            )
        }
    }

    static func closeCursor(_ connection: Connection) throws {
        try connection.executeScript("CLOSE liveline_cap_history")
    }
}

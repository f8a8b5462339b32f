import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of `liveline replay`: reading the log through a cursor (which `liveline verify` reads
/// too) into the scratch tables of migrations 0003 and 0005, comparing them with the live
/// projection, and swapping them in. `app` is `nil` for the whole log, or one app's id.
enum ReplayQueries {
    /// The session advisory lock that makes replays take turns.
    private static let lockKey: Int64 = 7_610_418_230_571_501_313

    static func tryLock(_ connection: Connection) throws -> Bool {
        try connection.query("SELECT pg_try_advisory_lock(\(lockKey))").single!.decode(0)
    }

    static func unlock(_ connection: Connection) throws {
        try connection.execute("SELECT pg_advisory_unlock(\(lockKey))")
    }

    /// The snapshot of the current transaction, as text (`xmin:xmax:xip,…`).
    static func snapshot(_ connection: Connection) throws -> String {
        try connection.query("SELECT pg_current_snapshot()::text").single!.decode(0)
    }

    static func clearScratch(_ connection: Connection) throws {
        try connection.executeScript(
            "TRUNCATE activities_replay, activities_replay_staged, activities_replay_changes"
        )
    }

    static func eventCount(app: AppID?, _ connection: Connection) throws -> Int {
        try connection.query(
            "SELECT count(*) FROM events WHERE \(app?.rawValue)::text IS NULL OR app_id = \(app?.rawValue)"
        ).single!.decode(0)
    }

    /// The streams with events that `snapshot` does not see: those appended since it was taken.
    static func streamsAppended(since snapshot: String, app: AppID?, _ connection: Connection) throws -> [StreamID] {
        try connection.query(
            """
            SELECT DISTINCT app_id, activity_id FROM events
            WHERE position >= pg_snapshot_xmin(\(snapshot)::pg_snapshot)::text::bigint << 16
              AND NOT pg_visible_in_snapshot(transaction_id, \(snapshot)::pg_snapshot)
              AND (\(app?.rawValue)::text IS NULL OR app_id = \(app?.rawValue))
            """
        ).map(StreamID.init(row:))
    }

    /// Sends rebuilt rows (`ProjectionRow.copy`) to `activities_replay`, or to the staging table
    /// when they replace rows there (`staged`).
    static func copy(_ rows: [CopyTextRows], staged: Bool, _ connection: Connection) throws {
        let table = staged ? "activities_replay_staged" : "activities_replay"
        let columns = ProjectionRow.columnNames.joined(separator: ", ")
        try connection.copyIn("COPY \(table) (\(columns)) FROM STDIN", rows: rows)
    }

    /// Moves the staged rows into `activities_replay`, replacing rows of the same activities, and
    /// marks those activities as changed.
    static func mergeStaged(_ connection: Connection) throws {
        try connection.execute(
            """
            DELETE FROM activities_replay r USING activities_replay_staged s
            WHERE r.app_id = s.app_id AND r.activity_id = s.activity_id
            """
        )
        try connection.execute("INSERT INTO activities_replay SELECT * FROM activities_replay_staged")
        try connection.execute(
            """
            INSERT INTO activities_replay_changes SELECT app_id, activity_id FROM activities_replay_staged
            ON CONFLICT DO NOTHING
            """
        )
        try connection.executeScript("TRUNCATE activities_replay_staged")
    }

    /// Takes the live rows of activities whose streams cannot be folded as they are, so that
    /// they are neither reported as differences nor changed, and counts still include them.
    static func keepLive(_ streams: [StreamID], _ connection: Connection) throws {
        guard !streams.isEmpty else { return }
        try connection.execute(
            """
            INSERT INTO activities_replay
            SELECT a.* FROM activities a
            JOIN unnest(\(PostgresArray(streams.map(\.app.rawValue))), \(PostgresArray(streams.map(\.activity.rawValue))))
                AS kept(app_id, activity_id)
              ON a.app_id = kept.app_id AND a.activity_id = kept.activity_id
            ON CONFLICT DO NOTHING
            """
        )
    }

    /// Records every activity whose live row (stripes aside: the views leave them out) differs
    /// from the rebuilt one, or exists on one side only. Returns how many. Runs first on the
    /// emptied table, and the join gives each activity once: nothing can conflict, so the insert
    /// is a plain one (`ON CONFLICT` would make it about 40 % slower when every row differs).
    static func markChanges(app: AppID?, _ connection: Connection) throws -> Int {
        try connection.execute(
            """
            INSERT INTO activities_replay_changes
            SELECT coalesce(r.app_id, a.app_id), coalesce(r.activity_id, a.activity_id)
            FROM liveline_replay_rows r
            FULL JOIN (SELECT * FROM liveline_activity_rows
                       WHERE \(app?.rawValue)::text IS NULL OR app_id = \(app?.rawValue)) a
              ON a.app_id = r.app_id AND a.activity_id = r.activity_id
            WHERE r IS DISTINCT FROM a
            """
        )
    }

    /// The rebuilt and the live row of changed activities, in order, at most `limit`.
    static func changes(limit: Int, _ connection: Connection) throws -> [ProjectionMismatch] {
        try connection.query(
            """
            SELECT c.app_id, c.activity_id, r.*, a.*
            FROM activities_replay_changes c
            LEFT JOIN liveline_replay_rows r ON r.app_id = c.app_id AND r.activity_id = c.activity_id
            LEFT JOIN liveline_activity_rows a ON a.app_id = c.app_id AND a.activity_id = c.activity_id
            ORDER BY c.app_id, c.activity_id LIMIT \(limit)
            """
        ).map { row in
            // The first `app_id` and `activity_id` are the change's, present when either row is not.
            ProjectionMismatch(
                stream: try StreamID(row: row),
                rebuilt: try ProjectionRow.stored(from: row, at: 2),
                live: try ProjectionRow.stored(from: row, at: 2 + ProjectionRow.columnCount)
            )
        }
    }

    /// Open counts that differ between the rebuilt projection and the counts the caps use: per
    /// app, per device, and (for the whole log) globally.
    static func countMismatches(app: AppID?, _ connection: Connection) throws -> [OpenCountMismatch] {
        try connection.query(
            """
            WITH rebuilt AS (
                SELECT app_id::text, device_id::text FROM activities_replay
                WHERE state IN ('pending', 'active', 'stale')
            ), apps_in_scope AS (
                SELECT app_id::text FROM apps WHERE \(app?.rawValue)::text IS NULL OR app_id = \(app?.rawValue)
            ), per_app AS (
                SELECT s.app_id, NULL::text AS device_id,
                       (SELECT count(*) FROM rebuilt r WHERE r.app_id = s.app_id) AS rebuilt,
                       coalesce((SELECT sum(open) FROM app_open_stripes o WHERE o.app_id = s.app_id), 0)::bigint AS live
                FROM apps_in_scope s
            ), per_device AS (
                SELECT coalesce(r.app_id, d.app_id), coalesce(r.device_id, d.device_id),
                       coalesce(r.open, 0), coalesce(d.open, 0)::bigint
                FROM (SELECT app_id, device_id, count(*) AS open FROM rebuilt WHERE device_id IS NOT NULL
                      GROUP BY app_id, device_id) r
                FULL JOIN (SELECT app_id::text, device_id, open FROM device_open_counts
                           WHERE app_id IN (SELECT app_id FROM apps_in_scope)) d
                  ON d.app_id = r.app_id AND d.device_id = r.device_id
            ), global AS (
                SELECT NULL::text, NULL::text, (SELECT count(*) FROM rebuilt),
                       (SELECT sum(open) FROM global_open_stripes)::bigint
                WHERE \(app?.rawValue)::text IS NULL
            )
            SELECT * FROM (SELECT * FROM per_app UNION ALL SELECT * FROM per_device UNION ALL SELECT * FROM global) m
            WHERE rebuilt <> live
            ORDER BY app_id NULLS FIRST, device_id NULLS FIRST
            """
        ).map { row in
            OpenCountMismatch(
                app: try row.decode("app_id", as: String?.self).map(AppID.init(uncheckedRawValue:)),
                device: try row.decode("device_id", as: String?.self).map(DeviceID.init(uncheckedRawValue:)),
                rebuilt: try row.decode("rebuilt"),
                live: try row.decode("live")
            )
        }
    }

    /// Closes the append gate (appends wait until this transaction ends) and holds cap changes.
    static func closeGate(_ connection: Connection) throws {
        try connection.executeScript(
            """
            LOCK TABLE liveline_append_gate IN EXCLUSIVE MODE;
            LOCK TABLE apps, service_limits IN SHARE MODE
            """
        )
    }

    /// Writes the changed activities' rebuilt rows into the live projection, then recounts the
    /// open counts from it and respreads the caps. An activity that stays open keeps its stripes;
    /// one that opens takes stripes by the hash of its id (the respread makes any choice exact).
    static func swap(app: AppID?, _ connection: Connection) throws {
        try connection.execute(
            """
            UPDATE activities_replay r SET app_stripe = a.app_stripe, global_stripe = a.global_stripe
            FROM activities_replay_changes c, activities a
            WHERE c.app_id = r.app_id AND c.activity_id = r.activity_id
              AND a.app_id = r.app_id AND a.activity_id = r.activity_id
              AND r.state IN ('pending', 'active', 'stale') AND a.app_stripe IS NOT NULL
            """
        )
        try connection.execute(
            """
            UPDATE activities_replay r
            SET app_stripe = abs(hashtext(r.activity_id)) % 8, global_stripe = abs(hashtext(r.activity_id)) % 16
            FROM activities_replay_changes c
            WHERE c.app_id = r.app_id AND c.activity_id = r.activity_id
              AND r.state IN ('pending', 'active', 'stale') AND r.app_stripe IS NULL
            """
        )
        // Each rebuilt stream keeps the time it began, which its events carry (their partition).
        try connection.execute(
            """
            UPDATE activities_replay r SET stream_recorded_at = e.stream_recorded_at
            FROM activities_replay_changes c, events e
            WHERE c.app_id = r.app_id AND c.activity_id = r.activity_id
              AND e.app_id = r.app_id AND e.activity_id = r.activity_id AND e.version = 1
            """
        )
        try connection.execute(
            """
            DELETE FROM activities a USING activities_replay_changes c
            WHERE a.app_id = c.app_id AND a.activity_id = c.activity_id
            """
        )
        try connection.execute(
            """
            INSERT INTO activities
            SELECT r.* FROM activities_replay r
            JOIN activities_replay_changes c ON c.app_id = r.app_id AND c.activity_id = r.activity_id
            """
        )
        try connection.execute(
            """
            UPDATE app_open_stripes s SET open = n.open
            FROM (SELECT o.app_id, o.stripe, count(a.activity_id) AS open
                  FROM app_open_stripes o
                  LEFT JOIN activities a ON a.app_id = o.app_id AND a.app_stripe = o.stripe
                   AND a.state IN ('pending', 'active', 'stale')
                  WHERE \(app?.rawValue)::text IS NULL OR o.app_id = \(app?.rawValue)
                  GROUP BY o.app_id, o.stripe) n
            WHERE s.app_id = n.app_id AND s.stripe = n.stripe AND s.open <> n.open
            """
        )
        try connection.execute(
            """
            UPDATE global_open_stripes s SET open = n.open
            FROM (SELECT g.stripe, count(a.activity_id) AS open
                  FROM global_open_stripes g
                  LEFT JOIN activities a ON a.global_stripe = g.stripe AND a.state IN ('pending', 'active', 'stale')
                  GROUP BY g.stripe) n
            WHERE s.stripe = n.stripe AND s.open <> n.open
            """
        )
        try connection.execute(
            """
            WITH counted AS (
                SELECT app_id, device_id, count(*)::integer AS open FROM activities
                WHERE device_id IS NOT NULL AND state IN ('pending', 'active', 'stale')
                  AND (\(app?.rawValue)::text IS NULL OR app_id = \(app?.rawValue))
                GROUP BY app_id, device_id
            ), emptied AS (
                UPDATE device_open_counts d SET open = 0
                WHERE (\(app?.rawValue)::text IS NULL OR d.app_id = \(app?.rawValue)) AND d.open <> 0
                  AND NOT EXISTS (SELECT 1 FROM counted c WHERE c.app_id = d.app_id AND c.device_id = d.device_id)
            )
            INSERT INTO device_open_counts AS d (app_id, device_id, open) SELECT * FROM counted
            ON CONFLICT (app_id, device_id) DO UPDATE SET open = excluded.open WHERE d.open <> excluded.open
            """
        )
        try connection.execute(
            """
            SELECT liveline_respread_app_cap(app_id) FROM apps
            WHERE \(app?.rawValue)::text IS NULL OR app_id = \(app?.rawValue) ORDER BY app_id
            """
        )
        try connection.execute("SELECT liveline_respread_global_cap()")
    }
}

import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of remote starts awaiting their devices' confirmation (`remote_starts`).
enum RemoteStartQueries {
    /// Records starts APNs accepted, once each; not those of activities on a channel, which have
    /// no token to wait for.
    static func accept(_ starts: [AcceptedStart], _ connection: Connection) throws {
        guard !starts.isEmpty else { return }
        try connection.execute(
            """
            INSERT INTO remote_starts (app_id, activity_id, device_id, activity_type, token, position, accepted_at)
            SELECT a.app_id, a.activity_id, a.device_id, a.activity_type, s.token, s.position, s.accepted_at
            FROM unnest(\(PostgresArray(starts.map(\.stream.app.rawValue))),
                    \(PostgresArray(starts.map(\.stream.activity.rawValue))), \(PostgresArray(starts.map(\.token))),
                    \(PostgresArray(starts.map(\.position))),
                    \(PostgresArray(starts.map { PostgresTimestamp($0.acceptedAt) })))
                AS s(app_id, activity_id, token, position, accepted_at)
            JOIN activities a ON a.app_id = s.app_id AND a.activity_id = s.activity_id
            WHERE a.device_id IS NOT NULL AND a.push_type IS DISTINCT FROM 'channel'
            ORDER BY 1, 2
            ON CONFLICT DO NOTHING
            """
        )
    }

    /// A start whose window ran out, with its activity, both locked until the transaction ends.
    struct Due {
        let slot: PushToStartSlot
        let token: String
        let acceptedAt: Timestamp
        let stored: StoredActivity
    }

    /// Claims up to `limit` starts accepted at or before `cutoff` and not settled, that no other
    /// worker holds, with their activities.
    static func claimDue(acceptedBy cutoff: Timestamp, limit: Int, _ connection: Connection) throws -> [Due] {
        try connection.query(
            """
            SELECT s.token AS start_token, s.accepted_at AS start_accepted_at, a.*
            FROM remote_starts s
            JOIN liveline_activity_rows a ON a.app_id = s.app_id AND a.activity_id = s.activity_id
            WHERE s.verdict IS NULL AND s.accepted_at <= \(PostgresTimestamp(cutoff))
            ORDER BY s.accepted_at LIMIT \(limit)
            FOR UPDATE SKIP LOCKED
            """
        ).compactMap { row in
            // A start is recorded only for an activity with a device (the slot's, as its row says).
            guard let stored = try ProjectionRow.stored(from: row, at: 2), let device = stored.activity.deviceID else {
                return nil
            }
            return Due(
                slot: PushToStartSlot(
                    app: stored.stream.app,
                    device: device,
                    activityType: stored.activity.activityType
                ),
                token: try row.decode("start_token"),
                acceptedAt: Timestamp(try row.decode("start_accepted_at", as: PostgresTimestamp.self)),
                stored: stored
            )
        }
    }

    /// Writes each claimed start's verdict.
    static func settle(_ settled: [(Due, StartVerdict)], at now: Timestamp, _ connection: Connection) throws {
        guard !settled.isEmpty else { return }
        try connection.execute(
            """
            UPDATE remote_starts s SET verdict = v.verdict, settled_at = \(PostgresTimestamp(now))
            FROM unnest(\(PostgresArray(settled.map(\.0.stored.stream.app.rawValue))),
                    \(PostgresArray(settled.map(\.0.stored.stream.activity.rawValue))),
                    \(PostgresArray(settled.map(\.1.rawValue))))
                AS v(app_id, activity_id, verdict)
            WHERE s.app_id = v.app_id AND s.activity_id = v.activity_id
            """
        )
    }

    /// For each start (or a token's latest, with no `acceptedAt`), how many of its token's
    /// settled starts up to it went unconfirmed in a row:
    /// counted back from it to the first that was confirmed, or whose activity has its push token
    /// now (a token that came late confirms its start after all). Starts settled `dismissed`
    /// neither count nor end a run.
    static func unconfirmedInARow(
        through starts: [(slot: PushToStartSlot, token: String, acceptedAt: Timestamp?)],
        _ connection: Connection
    ) throws -> [Int] {
        guard !starts.isEmpty else { return [] }
        var counts = Array(repeating: 0, count: starts.count)
        for row in try connection.query(
            """
            SELECT w.i, (
                SELECT count(*) FROM (
                    SELECT bool_and(s.verdict = 'unconfirmed' AND a.push_token IS NULL)
                        OVER (ORDER BY s.accepted_at DESC, s.activity_id DESC) AS in_run
                    FROM remote_starts s
                    LEFT JOIN activities a ON a.app_id = s.app_id AND a.activity_id = s.activity_id
                    WHERE s.app_id = w.app_id AND s.device_id = w.device_id AND s.activity_type = w.activity_type
                        AND s.token = w.token AND s.accepted_at <= coalesce(w.accepted_at, 'infinity')
                        AND s.verdict IN ('confirmed', 'unconfirmed')
                ) AS r WHERE r.in_run
            ) AS in_a_row
            FROM unnest(\(PostgresArray(starts.map(\.slot.app.rawValue))),
                    \(PostgresArray(starts.map(\.slot.device.rawValue))),
                    \(PostgresArray(starts.map(\.slot.activityType))), \(PostgresArray(starts.map(\.token))),
                    \(PostgresArray(starts.map { $0.acceptedAt.map(PostgresTimestamp.init) })))
                WITH ORDINALITY AS w(app_id, device_id, activity_type, token, accepted_at, i)
            """
        ) {
            counts[Int(try row.decode("i", as: Int64.self)) - 1] = Int(try row.decode("in_a_row", as: Int64.self))
        }
        return counts
    }

    /// Makes workers settle starts one at a time, until the transaction ends: each claims the
    /// oldest due starts after the last committed its verdicts, so every run counts every start
    /// before it. A worker waits the other's transaction out (milliseconds: starts are few).
    static func takeTurn(_ connection: Connection) throws {
        try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended('liveline_remote_starts', 0))")
    }

    /// When the earliest start still waiting was accepted.
    static func earliestWaiting(_ connection: Connection) throws -> Timestamp? {
        try connection.query("SELECT min(accepted_at) FROM remote_starts WHERE verdict IS NULL").single?
            .decode(0, as: PostgresTimestamp?.self).map(Timestamp.init)
    }
}

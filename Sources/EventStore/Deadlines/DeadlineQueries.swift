import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of the deadline worker.
enum DeadlineQueries {
    /// Claims up to `limit` activities with a deadline due by `now` that no other worker holds;
    /// they stay locked until the surrounding transaction ends.
    static func claimDue(at now: Timestamp, limit: Int, _ connection: Connection) throws -> [StoredActivity] {
        try connection.query(
            """
            SELECT * FROM liveline_activity_rows
            WHERE next_deadline_at <= \(PostgresTimestamp(now))
            ORDER BY next_deadline_at LIMIT \(limit)
            FOR UPDATE SKIP LOCKED
            """
        ).compactMap { try ProjectionRow.stored(from: $0, at: 0) }
    }

    static func earliestDeadline(_ connection: Connection) throws -> Timestamp? {
        try connection.query("SELECT min(next_deadline_at) FROM activities").single?
            .decode(0, as: PostgresTimestamp?.self).map(Timestamp.init)
    }
}

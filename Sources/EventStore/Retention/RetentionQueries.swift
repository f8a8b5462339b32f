import CanonicalJSON
import Postgres

/// The SQL of what the log keeps and for how long.
enum RetentionQueries {
    /// Creates the log's partitions from the newest one to some intervals past now
    /// (`liveline_create_partitions`); returns how many.
    static func createPartitions(_ connection: Connection) throws -> Int {
        try connection.query("SELECT liveline_create_partitions() AS created").single?.decode("created") ?? 0
    }

    /// Deletes up to `limit` idempotency keys created more than `window` ago, oldest first, and
    /// returns how many. Their age is by the database's clock, which stamped them; keys another
    /// transaction holds are left for the next batch.
    static func expireIdempotencyKeys(window: Duration, limit: Int, _ connection: Connection) throws -> Int {
        let seconds = Double(window.microseconds) / 1e6
        return try connection.query(
            """
            WITH expired AS (
                SELECT app_id, idempotency_key FROM idempotency_keys
                WHERE created_at < now() - make_interval(secs => \(seconds))
                ORDER BY created_at LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
            )
            DELETE FROM idempotency_keys k USING expired e
            WHERE k.app_id = e.app_id AND k.idempotency_key = e.idempotency_key
            """
        ).affectedRows
    }
}

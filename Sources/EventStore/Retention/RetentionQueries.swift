import CanonicalJSON
import Postgres

/// The SQL of what the log keeps and for how long.
enum RetentionQueries {
    /// The tables split by time (the parents of the partitions `log_partitions` records).
    static func partitionedTables(_ connection: Connection) throws -> [String] {
        try connection.query("SELECT DISTINCT parent FROM log_partitions ORDER BY parent").map {
            try $0.decode("parent")
        }
    }

    /// Creates `table`'s partitions from its newest one to some intervals past now
    /// (`liveline_create_partitions`); returns how many.
    static func createPartitions(of table: String, _ connection: Connection) throws -> Int {
        try connection.query("SELECT liveline_create_partitions(\(table)) AS created").single?.decode("created") ?? 0
    }

    static func setPartitionInterval(_ interval: Duration, _ connection: Connection) throws {
        try connection.execute(
            """
            UPDATE log_partitioning SET partition_interval = make_interval(secs => \(Double(interval.microseconds) / 1e6))
            """
        )
    }

    /// The bytes of each table that grows with traffic (with its indexes, and its partitions'), and
    /// how many of the log's partitions lie wholly ahead of now and wholly behind it.
    static func footprint(_ connection: Connection) throws -> LogFootprint {
        let bytes = try connection.query(
            """
            SELECT t.name, coalesce(
                    (SELECT sum(pg_total_relation_size(p.relid)) FROM pg_partition_tree(t.name::regclass) p),
                    pg_total_relation_size(t.name::regclass))::bigint AS bytes
            FROM unnest(\(PostgresArray(LogFootprint.growingTables))) AS t(name)
            """
        ).map { (try $0.decode("name", as: String.self), Int(try $0.decode("bytes", as: Int64.self))) }
        let partitions = try connection.query(
            """
            SELECT count(*) FILTER (WHERE from_time > now()) AS ahead,
                count(*) FILTER (WHERE to_time <= now() AND retired_at IS NULL) AS behind
            FROM log_partitions WHERE parent = 'events'
            """
        ).single
        return LogFootprint(
            bytesByTable: Dictionary(uniqueKeysWithValues: bytes),
            partitionsAhead: Int(try partitions?.decode("ahead", as: Int64.self) ?? 0),
            partitionsBehind: Int(try partitions?.decode("behind", as: Int64.self) ?? 0)
        )
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

    /// Forgets the idempotency keys of reload requests made more than `window` ago, up to
    /// `limit` (the requests stay); returns how many.
    static func expireReloadIdempotencyKeys(window: Duration, limit: Int, _ connection: Connection) throws -> Int {
        let seconds = Double(window.microseconds) / 1e6
        return try connection.execute(
            """
            UPDATE reload_requests SET idempotency_key = NULL, request_sha256 = NULL
            WHERE id IN (
                SELECT id FROM reload_requests
                WHERE idempotency_key IS NOT NULL AND requested_at < now() - make_interval(secs => \(seconds))
                ORDER BY id LIMIT \(limit)
                FOR UPDATE SKIP LOCKED)
            """
        )
    }
}

import CanonicalJSON
import Postgres

/// A partition whose retention has passed, as `log_partitions` records it.
struct RetiringPartition: Sendable {
    let name: String
    let parent: String
    /// The times it covers, RFC 3339 in UTC (`-infinity` for the rows from before partitions).
    let from: String
    let to: String
    /// Whether its archive was written and recorded already.
    let archived: Bool
}

/// An index of a detached partition, and the constraint it backs, if any.
struct PartitionIndex: Sendable, Equatable {
    let name: String
    let constraint: String?
}

/// The SQL of retiring the partitions whose retention has passed: settling the log's, archiving,
/// detaching without blocking appends, removing the projection rows of the streams retired, and
/// dropping (the indexes, then the table). Each step can be run again after a crash and does only what is left.
enum PartitionRetirementQueries {
    /// Whether the server's role may detach and drop partitions: only the tables' owner may.
    static func owner(_ connection: Connection) throws -> (mayRetire: Bool, role: String, owner: String) {
        let row = try connection.query(
            """
            SELECT pg_has_role(current_user, c.relowner, 'MEMBER') AS may_retire, current_user::text AS role,
                c.relowner::regrole::text AS owner
            FROM pg_class c WHERE c.oid = 'events'::regclass
            """
        ).single!
        return (try row.decode("may_retire"), try row.decode("role"), try row.decode("owner"))
    }

    /// Takes the session's lock on retirement, if no other session holds it.
    static func lockRetirement(_ connection: Connection) throws -> Bool {
        try connection.query(
            "SELECT pg_try_advisory_lock(hashtextextended('liveline_retire_partitions', 0)) AS locked"
        ).single!.decode("locked")
    }

    static func unlockRetirement(_ connection: Connection) throws {
        try connection.execute("SELECT pg_advisory_unlock(hashtextextended('liveline_retire_partitions', 0))")
    }

    /// Marks settled each partition of the log whose time has passed by `asOf` and whose
    /// activities are all dismissed (nothing can be appended to a dismissed activity), as of the
    /// database's clock (or the partition's end, if later). Returns how many it settled.
    static func settleLogPartitions(asOf: Timestamp, _ connection: Connection) throws -> Int {
        try connection.execute(
            """
            UPDATE log_partitions p SET settled_at = greatest(p.to_time, now())
            WHERE p.parent = 'events' AND p.settled_at IS NULL AND p.to_time <= \(PostgresTimestamp(asOf))
              AND NOT EXISTS (
                  SELECT FROM activities a
                  WHERE a.stream_recorded_at >= p.from_time AND a.stream_recorded_at < p.to_time
                    AND a.state <> 'dismissed')
            """
        )
    }

    /// The oldest partition not retired yet that settled `retention` or more before `asOf`.
    static func nextToRetire(
        retention: Duration,
        asOf: Timestamp,
        _ connection: Connection
    ) throws
        -> RetiringPartition?
    {
        let seconds = Double(retention.microseconds) / 1e6
        return try connection.query(
            """
            SELECT table_name, parent, archive IS NOT NULL AS archived,
                CASE WHEN isfinite(from_time)
                    THEN to_char(from_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
                    ELSE from_time::text END AS from_time,
                to_char(to_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS to_time
            FROM log_partitions
            WHERE retired_at IS NULL
              AND settled_at <= \(PostgresTimestamp(asOf)) - make_interval(secs => \(seconds))
            ORDER BY to_time, parent LIMIT 1
            """
        ).single.map { row in
            RetiringPartition(
                name: try row.decode("table_name"),
                parent: try row.decode("parent"),
                from: try row.decode("from_time"),
                to: try row.decode("to_time"),
                archived: try row.decode("archived")
            )
        }
    }

    /// The lowest and highest position in a partition of the log.
    static func positions(of partition: RetiringPartition, _ connection: Connection) throws -> (Int64?, Int64?) {
        let row = try connection.query(
            """
            SELECT min(position) AS first, max(position) AS last FROM \(identifier: partition.name)
            """
        ).single!
        return (try row.decode("first"), try row.decode("last"))
    }

    /// Records the archive's manifest (its JSON text) with the partition.
    static func recordArchive(_ manifest: String, of partition: RetiringPartition, _ connection: Connection) throws {
        try connection.execute(
            "UPDATE log_partitions SET archive = \(JSONB(manifest)) WHERE table_name = \(partition.name)"
        )
    }

    /// Detaches the partition from its table without blocking appends or reads (`CONCURRENTLY`,
    /// outside any transaction), or finishes a detach that was interrupted (`FINALIZE`).
    static func detach(_ partition: RetiringPartition, _ connection: Connection) throws {
        let pending: Bool? = try connection.query(
            """
            SELECT i.inhdetachpending AS pending FROM pg_inherits i
            WHERE i.inhrelid = to_regclass(quote_ident(\(partition.name)))
              AND i.inhparent = to_regclass(quote_ident(\(partition.parent)))
            """
        ).single?.decode("pending")
        switch pending {
        case nil: return
        case true?:
            try connection.executeUnprepared(
                "ALTER TABLE \(identifier: partition.parent) DETACH PARTITION \(identifier: partition.name) FINALIZE"
            )
        case false?:
            try connection.executeUnprepared(
                """
                ALTER TABLE \(identifier: partition.parent) DETACH PARTITION \(identifier: partition.name) CONCURRENTLY
                """
            )
        }
    }

    /// Removes up to `limit` projection rows of dismissed activities whose streams began in the
    /// partition's time, with the pushes still held for them and their remote starts' verdicts,
    /// keeping their devices until the tables retired on their own time have retired their rows
    /// (`retired_activities`); returns how many activities.
    /// Activities and held pushes are locked in key order, as a batch of commands and the
    /// delivery worker lock them: a statement that took several rows in another order could
    /// wait for a row of theirs while they wait for one of its, and PostgreSQL would end one.
    static func removeProjection(of partition: RetiringPartition, limit: Int, _ connection: Connection) throws -> Int {
        try connection.query(
            """
            WITH due AS (
                SELECT app_id, activity_id FROM activities
                WHERE stream_recorded_at >= \(partition.from)::timestamptz
                  AND stream_recorded_at < \(partition.to)::timestamptz AND state = 'dismissed'
                LIMIT \(literal: limit)
            ), gone AS (
                DELETE FROM activities a USING (
                    SELECT l.app_id, l.activity_id FROM (SELECT * FROM due ORDER BY 1, 2) AS d,
                        LATERAL (SELECT a.app_id, a.activity_id FROM activities a
                                 WHERE a.app_id = d.app_id AND a.activity_id = d.activity_id FOR UPDATE) AS l
                ) AS r
                WHERE a.app_id = r.app_id AND a.activity_id = r.activity_id
                RETURNING a.app_id, a.activity_id, a.device_id
            ), remembered AS (
                INSERT INTO retired_activities (app_id, activity_id, device_id)
                SELECT app_id, activity_id, device_id FROM gone WHERE device_id NOT LIKE 'erased:%'
                ON CONFLICT DO NOTHING
            ), holds AS (
                DELETE FROM delivery_holds h USING (
                    SELECT l.app_id, l.activity_id, l.position FROM (SELECT * FROM gone ORDER BY 1, 2) AS g,
                        LATERAL (SELECT h.app_id, h.activity_id, h.position FROM delivery_holds h
                                 WHERE h.app_id = g.app_id AND h.activity_id = g.activity_id
                                 ORDER BY h.position FOR UPDATE) AS l
                ) AS r
                WHERE h.app_id = r.app_id AND h.activity_id = r.activity_id AND h.position = r.position
            ), starts AS (
                DELETE FROM remote_starts s USING gone g
                WHERE s.app_id = g.app_id AND s.activity_id = g.activity_id
            )
            SELECT count(*)::bigint AS removed FROM gone
            """
        ).single.map { Int(try $0.decode("removed", as: Int64.self)) } ?? 0
    }

    /// A detached partition's indexes, largest first, each with the constraint it backs (a key
    /// or a unique constraint, dropped through its table): none once its table is gone. Dropping
    /// them one at a time before the table frees the partition's storage a file at a time (see
    /// `EventStore.retire`).
    static func indexes(of partition: RetiringPartition, _ connection: Connection) throws -> [PartitionIndex] {
        try connection.query(
            """
            SELECT x.relname::text AS index, c.conname::text AS constraint
            FROM pg_index i
            JOIN pg_class x ON x.oid = i.indexrelid
            LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid
            WHERE i.indrelid = to_regclass(quote_ident(\(partition.name)))
            ORDER BY pg_relation_size(i.indexrelid) DESC, x.relname
            """
        ).map { PartitionIndex(name: try $0.decode("index"), constraint: try $0.decode("constraint")) }
    }

    static func dropIndex(_ index: PartitionIndex, of partition: RetiringPartition, _ connection: Connection) throws {
        if let constraint = index.constraint {
            try connection.executeUnprepared(
                "ALTER TABLE \(identifier: partition.name) DROP CONSTRAINT IF EXISTS \(identifier: constraint)"
            )
        } else {
            try connection.executeUnprepared("DROP INDEX IF EXISTS \(identifier: index.name)")
        }
    }

    static func drop(_ partition: RetiringPartition, _ connection: Connection) throws {
        try connection.executeUnprepared("DROP TABLE IF EXISTS \(identifier: partition.name)")
    }

    static func markRetired(_ partition: RetiringPartition, _ connection: Connection) throws {
        try connection.execute(
            "UPDATE log_partitions SET retired_at = now() WHERE table_name = \(partition.name)"
        )
    }

    /// Forgets the devices of activities retired from the projection that no partition left of
    /// the tables retired on their own time can hold rows of: those retired before the oldest of
    /// them begins.
    static func forgetRetiredActivities(_ connection: Connection) throws {
        try connection.execute(
            """
            DELETE FROM retired_activities WHERE retired_at < (
                SELECT coalesce(min(from_time), 'infinity') FROM log_partitions
                WHERE parent IN ('deliveries', 'rejections', 'push_token_invalidations') AND retired_at IS NULL
            )
            """
        )
    }
}

extension PartitionRetirementQueries {
    /// Whether the partition's table is still there (attached or not).
    static func exists(_ partition: RetiringPartition, _ connection: Connection) throws -> Bool {
        try connection.query(
            "SELECT to_regclass(quote_ident(\(partition.name))) IS NOT NULL AS present"
        ).single!.decode("present")
    }
}

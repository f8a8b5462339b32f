import CanonicalJSON
import LogArchive
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

    /// Writes the partition's rows as CSV through `write`, with the columns of its table (the
    /// log's rows also say when their transaction committed, when the database records it, which
    /// `liveline verify` needs to replay the caps), in the order of its key (`archiveKey`): the
    /// log's streams by app and activity id, each stream's events together in version order, so
    /// that a reader finds a stream's events in one run; deliveries by event and id; other rows
    /// by id. Returns how many rows it wrote.
    ///
    /// It copies `chunkRows` rows at a time, each chunk a statement of its own, so that no
    /// snapshot is held for long: a snapshot held for seconds keeps every table's dead rows from
    /// being pruned meanwhile, and the projection rows that every command updates would slow
    /// down the writes around it. The partition's rows no longer change (it settled), so the
    /// chunks add up to what one statement would read. `pause` is called after each chunk.
    static func copy(
        _ partition: RetiringPartition,
        chunkRows: Int = 5_000,
        _ connection: Connection,
        into writeOut: (UnsafeRawBufferPointer) throws -> Void,
        pause: () throws -> Void = {}
    ) throws -> Int {
        let columns: [String] = try connection.query(
            """
            SELECT attname::text AS name FROM pg_attribute
            WHERE attrelid = to_regclass(quote_ident(\(partition.parent))) AND attnum > 0 AND NOT attisdropped
            ORDER BY attnum
            """
        ).map { try $0.decode("name") }
        let key = archiveKey(of: partition.parent)
        let redaction = ArchiveRedaction.of(partition.parent)
        var sealer = redaction.sealing.map {
            ArchiveSealer(table: partition.parent, rowKey: $0.rowKey, column: $0.column, redact: $0.redact)
        }
        func write(_ bytes: UnsafeRawBufferPointer) throws {
            if sealer != nil { try sealer!.feed(bytes, into: writeOut) } else { try writeOut(bytes) }
        }
        _ = try copyChunk(
            partition,
            columns: columns,
            key: key,
            redaction: redaction,
            rows: nil,
            connection,
            into: write
        )
        var copied = 0
        var after: String?
        while true {
            let rows = try chunk(of: partition, key: key, after: after, limit: chunkRows, connection)
            guard let last = rows.last else { break }
            copied += try copyChunk(
                partition,
                columns: columns,
                key: key,
                redaction: redaction,
                rows: rows,
                connection,
                into: write
            )
            try pause()
            if rows.count < chunkRows { break }
            after = last
        }
        try sealer?.finish()
        return copied
    }

    /// The columns an archive's rows are ordered by: a key of the table's (an index serves it).
    static func archiveKey(of parent: String) -> [String] {
        switch parent {
        case "events": ["app_id", "activity_id", "version"]
        case "deliveries": ["position", "id"]
        case "event_traces": ["position"]
        default: ["id"]
        }
    }

    /// The addresses (`ctid`) of the next `limit` rows in key order after the row at `after`
    /// (from the first when `nil`).
    private static func chunk(
        of partition: RetiringPartition,
        key: [String],
        after: String?,
        limit: Int,
        _ connection: Connection
    ) throws -> [String] {
        guard let after else {
            return try connection.query(
                """
                SELECT ctid::text AS row FROM \(identifier: partition.name)
                ORDER BY \(identifiers: key) LIMIT \(literal: limit)
                """
            ).map { try $0.decode("row") }
        }
        return try connection.query(
            """
            SELECT ctid::text AS row FROM \(identifier: partition.name)
            WHERE (\(identifiers: key)) > (SELECT \(identifiers: key) FROM \(identifier: partition.name) WHERE ctid = \(after)::tid)
            ORDER BY \(identifiers: key) LIMIT \(literal: limit)
            """
        ).map { try $0.decode("row") }
    }

    /// Copies the rows at `rows` (their `ctid`s) in key order as CSV, redacted (`ArchiveRedaction`),
    /// or, when `nil`, the CSV's header line alone. COPY takes no parameters: the addresses reach
    /// it as a setting of its transaction. Returns how many rows it wrote.
    private static func copyChunk(
        _ partition: RetiringPartition,
        columns: [String],
        key: [String],
        redaction: ArchiveRedaction,
        rows: [String]?,
        _ connection: Connection,
        into write: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int {
        try connection.transaction { connection in
            // Times in one unambiguous form, whoever reads the file. A chunk's lookups are index
            // probes the planner costs high enough to compile (JIT) at each chunk, which takes
            // longer than running them.
            try connection.executeScript("SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO'; SET LOCAL jit = off")
            if let rows, redaction.preparation != .nothing {
                try ArchiveKeyQueries.holdErasures(connection)
                if redaction.preparation == .keys {
                    try ArchiveKeyQueries.makeKeys(for: rows, of: partition.name, connection)
                } else {
                    try ArchiveKeyQueries.referenceDevices(for: rows, of: partition.name, connection)
                }
            }
            try connection.execute(
                "SELECT set_config('liveline.archive_rows', \(PostgresArray(rows ?? []))::tid[]::text, true)"
            )
            // The log's rows also say when their transaction committed, when the database records it.
            let committed: StaticString =
                partition.parent == "events"
                ? """
                , CASE WHEN current_setting('track_commit_timestamp')::boolean
                    THEN pg_xact_commit_timestamp(r.transaction_id::xid) END AS committed_at
                """ : ""
            return try connection.copyOut(
                """
                COPY (
                    SELECT \(columns: redaction.selected(columns))\(fragment: committed)\(fragment: redaction.working)
                    FROM \(identifier: partition.name) r \(fragment: redaction.joins)
                    CROSS JOIN LATERAL (\(fragment: redaction.redacted)) z
                    WHERE r.ctid = ANY (current_setting('liveline.archive_rows')::tid[])
                    ORDER BY \(columns: key.map { (of: "r", name: $0) })
                ) TO STDOUT WITH (FORMAT csv, HEADER \(literal: rows == nil ? 1 : 0))
                """,
                into: write
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
    /// partition's time, with the pushes still held for them and their remote starts' verdicts;
    /// returns how many activities.
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
                RETURNING a.app_id, a.activity_id
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
}

extension PartitionRetirementQueries {
    /// Whether the partition's table is still there (attached or not).
    static func exists(_ partition: RetiringPartition, _ connection: Connection) throws -> Bool {
        try connection.query(
            "SELECT to_regclass(quote_ident(\(partition.name))) IS NOT NULL AS present"
        ).single!.decode("present")
    }
}

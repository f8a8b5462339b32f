import LogArchive
import Postgres

/// A partition's archive, copied out a chunk at a time (`ArchiveRedaction` says what of it is
/// redacted and sealed).
extension PartitionRetirementQueries {
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
        var sealer = try redaction.sealing.map {
            try ArchiveSealer(table: partition.parent, rowKey: $0.rowKey, column: $0.column, redact: $0.redact)
        }
        func write(_ bytes: UnsafeRawBufferPointer) throws {
            if sealer != nil { try sealer!.feed(bytes, into: writeOut) } else { try writeOut(bytes) }
        }
        func provide(_ sealings: [ArchiveSealer.Activity: ArchiveSealer.Sealing]) { sealer?.provide(sealings) }
        _ = try copyChunk(
            partition,
            columns: columns,
            key: key,
            redaction: redaction,
            rows: nil,
            connection,
            provide: provide,
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
                provide: provide,
                into: write
            )
            try pause()
            if rows.count < chunkRows { break }
            after = last
        }
        try sealer?.finish(into: writeOut)
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
    /// or, when `nil`, the CSV's header line alone, after giving `provide` how their activities
    /// are sealed. COPY takes no parameters: the addresses reach it as a setting of its
    /// transaction. Returns how many rows it wrote.
    private static func copyChunk(
        _ partition: RetiringPartition,
        columns: [String],
        key: [String],
        redaction: ArchiveRedaction,
        rows: [String]?,
        _ connection: Connection,
        provide: ([ArchiveSealer.Activity: ArchiveSealer.Sealing]) -> Void,
        into write: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int {
        try connection.transaction { connection in
            // Times in one unambiguous form, whoever reads the file. A chunk's lookups are index
            // probes the planner costs high enough to compile (JIT) at each chunk, which takes
            // longer than running them.
            try connection.executeScript("SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO'; SET LOCAL jit = off")
            if let rows, redaction.preparation != .nothing {
                try ArchiveKeyQueries.holdErasures(connection)
                if redaction.preparation == .sealings {
                    let activities = try ArchiveKeyQueries.activities(of: rows, in: partition.name, connection)
                    provide(try ArchiveKeyQueries.sealings(of: activities, connection))
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
                    SELECT \(columns: redaction.selected(columns))\(fragment: committed)
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
}

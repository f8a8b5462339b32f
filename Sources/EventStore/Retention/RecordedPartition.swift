public import CanonicalJSON
import Postgres

/// A partition of a table split by time, as the database records it: its times, whether its
/// table still reads it, whether it was retired, and the manifest of its archive if one was
/// written.
public struct RecordedPartition: Sendable {
    public let name: String
    public let from: String
    public let to: String
    /// Attached to its table (and not being detached): its rows are in the live table, and its
    /// archive, if one was written already, is not to be read as well.
    public let live: Bool
    public let retired: Bool
    /// The manifest's JSON text.
    public let archive: String?
}

/// The SQL of the partitions the tools read archives for.
enum RecordedPartitionQueries {
    static func partitions(
        of table: String,
        endingAfter time: Timestamp?,
        _ connection: Connection
    ) throws -> [RecordedPartition] {
        try connection.query(
            """
            SELECT table_name, from_time::text AS from_time, to_time::text AS to_time,
                EXISTS (SELECT FROM pg_inherits i
                        WHERE i.inhrelid = to_regclass(quote_ident(table_name)) AND i.inhparent = parent::regclass
                          AND NOT i.inhdetachpending) AS live,
                retired_at IS NOT NULL AS retired, archive::text AS archive
            FROM log_partitions
            WHERE parent = \(table) AND (\(time.map(PostgresTimestamp.init))::timestamptz IS NULL
                OR to_time > \(time.map(PostgresTimestamp.init)))
            ORDER BY to_time
            """
        ).map { row in
            RecordedPartition(
                name: try row.decode("table_name"),
                from: try row.decode("from_time"),
                to: try row.decode("to_time"),
                live: try row.decode("live"),
                retired: try row.decode("retired"),
                archive: try row.decode("archive")
            )
        }
    }
}

extension EventStore {
    /// The partitions of `table` (`events`, `deliveries`, …), oldest first; only those whose
    /// time ends after `time`, when given.
    public func recordedPartitions(
        of table: String,
        endingAfter time: Timestamp? = nil
    ) async throws -> [RecordedPartition] {
        try await withConnection { try RecordedPartitionQueries.partitions(of: table, endingAfter: time, $0) }
    }
}

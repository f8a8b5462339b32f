import EventStore
import Postgres

/// A partition of the log as the database records it: its times, whether `events` still reads
/// it, whether it was retired, and the manifest of its archive if one was written.
struct RecordedLogPartition: Sendable {
    let name: String
    let from: String
    let to: String
    /// Attached to `events` (and not being detached): its rows are in the live log.
    let live: Bool
    let retired: Bool
    /// The manifest's JSON text.
    let archive: String?
}

/// The SQL `liveline verify --archive` reads: the log's partitions, live and retired.
enum ArchiveQueries {
    static func logPartitions(_ connection: Connection) throws -> [RecordedLogPartition] {
        try connection.query(
            """
            SELECT table_name, from_time::text AS from_time, to_time::text AS to_time,
                EXISTS (SELECT FROM pg_inherits i
                        WHERE i.inhrelid = to_regclass(quote_ident(table_name)) AND i.inhparent = 'events'::regclass
                          AND NOT i.inhdetachpending) AS live,
                retired_at IS NOT NULL AS retired, archive::text AS archive
            FROM log_partitions WHERE parent = 'events' ORDER BY to_time
            """
        ).map { row in
            RecordedLogPartition(
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
    /// The log's partitions, oldest first.
    func recordedLogPartitions() async throws -> [RecordedLogPartition] {
        try await withConnection { try ArchiveQueries.logPartitions($0) }
    }
}

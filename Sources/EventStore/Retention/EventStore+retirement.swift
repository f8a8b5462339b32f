public import CanonicalJSON
public import LogArchive
import Postgres

/// How long the log keeps what it holds, and where retired partitions are archived.
public struct RetentionPolicy: Sendable {
    /// How long a partition is kept after it settled: for the log, after the last of its
    /// activities was dismissed; for deliveries, rejections and token invalidations, after its
    /// time ended.
    public var retention: Duration
    /// Where each partition is archived before it is dropped; `nil` drops it unarchived.
    public var archive: ArchiveFolder?

    public init(retention: Duration, archive: ArchiveFolder?) {
        self.retention = retention
        self.archive = archive
    }
}

/// A partition retirement removed: its table, and what became of its rows.
public struct RetiredPartition: Sendable, Equatable, Encodable {
    public let partition: String
    public let table: String
    /// Its archive, when one was written (now or by an earlier, interrupted run).
    public let archive: ArchiveManifest?
    /// The projection rows of the activities retired with it (the log's partitions only).
    public let activitiesRemoved: Int
}

/// Why the server may not retire partitions.
public struct RetentionNotPermitted: Error, CustomStringConvertible {
    public let role: String
    public let owner: String

    public var description: String {
        "the database role \(role) does not own the log's tables (\(owner) does): retention detaches and "
            + "drops partitions, which only their owner may do; connect as \(owner), or a role that is a member of it"
    }
}

extension EventStore {
    /// Throws `RetentionNotPermitted` unless the server's database role may detach and drop the
    /// log's partitions.
    public func checkMayRetirePartitions() async throws {
        let (mayRetire, role, owner) = try await withConnection { try PartitionRetirementQueries.owner($0) }
        guard mayRetire else { throw RetentionNotPermitted(role: role, owner: owner) }
    }

    /// Retires every partition whose retention has passed by `asOf` (the database's clock when
    /// `nil`), oldest first: archives it when the policy says where and it is not archived yet
    /// (written, flushed, read back and checked before anything is removed), detaches it
    /// without blocking appends, removes the projection rows of its activities (all dismissed),
    /// drops it, and records it retired. A run interrupted anywhere is finished by the next.
    /// One process retires at a time. Returns what it retired, or `nil` when another process is
    /// retiring now (it does the work).
    @discardableResult
    public func retirePartitions(
        _ policy: RetentionPolicy,
        asOf: Timestamp? = nil,
        batchSize: Int = 10_000
    ) async throws -> [RetiredPartition]? {
        try await withConnection { connection in
            guard try PartitionRetirementQueries.lockRetirement(connection) else { return nil }
            defer { try? PartitionRetirementQueries.unlockRetirement(connection) }
            let now = try Self.databaseNow(connection)
            let asOf = asOf ?? now
            _ = try PartitionRetirementQueries.settleLogPartitions(asOf: asOf, connection)
            var retired: [RetiredPartition] = []
            while let partition = try PartitionRetirementQueries.nextToRetire(
                retention: policy.retention,
                asOf: asOf,
                connection
            ) {
                retired.append(
                    try Self.retire(partition, policy, archivedAt: now, batchSize: batchSize, connection)
                )
            }
            return retired
        }
    }

    private static func retire(
        _ partition: RetiringPartition,
        _ policy: RetentionPolicy,
        archivedAt: Timestamp,
        batchSize: Int,
        _ connection: Connection
    ) throws -> RetiredPartition {
        var manifest: ArchiveManifest?
        if let folder = policy.archive, !partition.archived,
            try PartitionRetirementQueries.exists(partition, connection)
        {
            let (first, last) =
                partition.parent == "events"
                ? try PartitionRetirementQueries.positions(of: partition, connection) : (nil, nil)
            let written = try folder.write(
                .init(
                    table: partition.parent,
                    partition: partition.name,
                    from: partition.from,
                    to: partition.to,
                    firstPosition: first,
                    lastPosition: last
                ),
                archivedAt: "\(archivedAt)"
            ) { write in try PartitionRetirementQueries.copy(partition, connection, into: write) }
            try PartitionRetirementQueries.recordArchive(
                String(decoding: try written.encoded(), as: UTF8.self),
                of: partition,
                connection
            )
            manifest = written
        }
        try PartitionRetirementQueries.detach(partition, connection)
        var removed = 0
        if partition.parent == "events" {
            while true {
                let batch = try PartitionRetirementQueries.removeProjection(of: partition, limit: batchSize, connection)
                removed += batch
                if batch < batchSize { break }
            }
        }
        try PartitionRetirementQueries.drop(partition, connection)
        try PartitionRetirementQueries.markRetired(partition, connection)
        return RetiredPartition(
            partition: partition.name,
            table: partition.parent,
            archive: manifest,
            activitiesRemoved: removed
        )
    }

    private static func databaseNow(_ connection: Connection) throws -> Timestamp {
        Timestamp(try connection.query("SELECT now() AS now").single!.decode("now", as: PostgresTimestamp.self))
    }
}

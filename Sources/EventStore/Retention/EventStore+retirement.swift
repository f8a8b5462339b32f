public import CanonicalJSON
public import LogArchive
import Postgres
import Synchronization

/// How long the log keeps what it holds, and where retired partitions are archived.
public struct RetentionPolicy: Sendable {
    /// How long a partition is kept after it settled: for the log, after the last of its
    /// activities was dismissed; for deliveries, rejections and token invalidations, after its
    /// time ended.
    public var retention: Duration
    /// Where each partition is archived before it is dropped; `nil` drops it unarchived.
    public var archive: ArchiveFolder?
    /// The share of its time retirement works; it rests the rest (`WorkPacer`), so that archiving
    /// and dropping a partition beside a busy server take about that share of one core from the
    /// requests rather than a whole core in a burst. 1 works without rest.
    public var workShare: Double

    public init(retention: Duration, archive: ArchiveFolder?, workShare: Double = 0.25) {
        precondition(workShare > 0 && workShare <= 1, "a share of the time is in (0, 1]")
        self.retention = retention
        self.archive = archive
        self.workShare = workShare
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
    /// without blocking appends, removes the projection rows of its activities (all dismissed,
    /// `batchSize` per transaction), drops its indexes one at a time and then its table, and
    /// records it retired. It works the policy's share of the time and rests the rest, between
    /// rows and steps, and rests around each change to the partition's table (`WorkPacer.alone`).
    /// A run interrupted anywhere (cancelling the task stops it between two pieces of work) is
    /// finished by the next. One process retires at a time. Returns what it retired, or `nil` when another process is
    /// retiring now (it does the work).
    @discardableResult
    public func retirePartitions(
        _ policy: RetentionPolicy,
        asOf: Timestamp? = nil,
        batchSize: Int = 1_000
    ) async throws -> [RetiredPartition]? {
        let stop = StopSignal()
        return try await withTaskCancellationHandler {
            try await withConnection { connection in
                guard try PartitionRetirementQueries.lockRetirement(connection) else { return nil }
                defer { try? PartitionRetirementQueries.unlockRetirement(connection) }
                let pacer = WorkPacer(share: policy.workShare, isStopped: stop.isStopped)
                let now = try Self.databaseNow(connection)
                let asOf = asOf ?? now
                _ = try PartitionRetirementQueries.settleLogPartitions(asOf: asOf, connection)
                var retired: [RetiredPartition] = []
                while let partition = try PartitionRetirementQueries.nextToRetire(
                    retention: policy.retention,
                    asOf: asOf,
                    connection
                ) {
                    try pacer.pause()
                    retired.append(
                        try Self.retire(
                            partition,
                            policy,
                            archivedAt: now,
                            batchSize: batchSize,
                            pacer: pacer,
                            connection
                        )
                    )
                }
                return retired
            }
        } onCancel: {
            stop.stop()
        }
    }

    private static func retire(
        _ partition: RetiringPartition,
        _ policy: RetentionPolicy,
        archivedAt: Timestamp,
        batchSize: Int,
        pacer: WorkPacer,
        _ connection: Connection
    ) throws -> RetiredPartition {
        var manifest: ArchiveManifest?
        if let folder = policy.archive, !partition.archived,
            try PartitionRetirementQueries.exists(partition, connection)
        {
            manifest = try archive(partition, into: folder, archivedAt: archivedAt, pause: pacer.pause, connection)
        }
        // The detach and the drops each run alone, away from the archive's and the removal's
        // heavier statements (ADR 0032).
        try pacer.alone { try PartitionRetirementQueries.detach(partition, connection) }
        var removed = 0
        if partition.parent == "events" {
            while true {
                let batch = try PartitionRetirementQueries.removeProjection(of: partition, limit: batchSize, connection)
                removed += batch
                try pacer.pause()
                if batch < batchSize { break }
            }
        }
        // A file's blocks are freed at once when it is dropped, and a filesystem that discards
        // them as it frees them (ext4 mounted with `discard`) holds back every commit's flush of
        // the write-ahead log meanwhile: so the indexes go first, one at a time, then the table.
        for index in try PartitionRetirementQueries.indexes(of: partition, connection) {
            try pacer.alone { try PartitionRetirementQueries.dropIndex(index, of: partition, connection) }
        }
        try pacer.alone { try PartitionRetirementQueries.drop(partition, connection) }
        try PartitionRetirementQueries.markRetired(partition, connection)
        try PartitionRetirementQueries.forgetRetiredActivities(connection)
        return RetiredPartition(
            partition: partition.name,
            table: partition.parent,
            archive: manifest,
            activitiesRemoved: removed
        )
    }

    /// Writes `partition`'s archive into `folder` (flushed, read back and checked) and records its
    /// manifest: the first step of its retirement. Returns the manifest.
    static func archive(
        _ partition: RetiringPartition,
        into folder: ArchiveFolder,
        archivedAt: Timestamp,
        pause: () throws -> Void = {},
        _ connection: Connection
    ) throws -> ArchiveManifest {
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
            archivedAt: "\(archivedAt)",
            pause: pause
        ) { write in
            // Rests between chunks, each a statement of its own: never while a snapshot is held.
            try PartitionRetirementQueries.copy(partition, connection, into: write, pause: pause)
        }
        try PartitionRetirementQueries.recordArchive(
            String(decoding: try written.encoded(), as: UTF8.self),
            of: partition,
            connection
        )
        return written
    }

    private static func databaseNow(_ connection: Connection) throws -> Timestamp {
        Timestamp(try connection.query("SELECT now() AS now").single!.decode("now", as: PostgresTimestamp.self))
    }
}

/// Tells a job that runs on a thread of its own that its task was cancelled.
private final class StopSignal: Sendable {
    private let stopped = Mutex(false)

    func stop() { stopped.withLock { $0 = true } }

    @Sendable func isStopped() -> Bool { stopped.withLock { $0 } }
}

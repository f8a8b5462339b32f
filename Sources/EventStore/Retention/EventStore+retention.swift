extension EventStore {
    /// Creates the log's partitions ahead of now (`log_partitioning` says how many, how long);
    /// an event can be appended only into a partition that exists. Returns how many it created.
    ///
    /// Each table's are created in a transaction of its own: attaching a partition makes every
    /// session plan its statements on that table again. With a `workShare` below 1, it rests
    /// between two tables `(1 - share) / share` times as long as the last one took, so that
    /// beside a busy server the changes come one at a time (as retirement paces itself,
    /// `RetentionPolicy.workShare`).
    @discardableResult
    public func createPartitions(workShare: Double = 1) async throws -> Int {
        precondition(workShare > 0 && workShare <= 1, "a share of the time is in (0, 1]")
        var created = 0
        var lastTook: Duration = .zero
        for table in try await withConnection({ try RetentionQueries.partitionedTables($0) }) {
            try await Task.sleep(for: lastTook * ((1 - workShare) / workShare))
            let started = ContinuousClock.now
            created += try await withTransaction { try RetentionQueries.createPartitions(of: table, $0) }
            lastTook = ContinuousClock.now - started
        }
        return created
    }

    /// Sets the length of the partitions created from now on (those made keep theirs).
    public func setPartitionInterval(_ interval: Duration) async throws {
        try await withTransaction { try RetentionQueries.setPartitionInterval(interval, $0) }
    }

    /// The bytes of the tables that grow with traffic and the partitions around now.
    public func logFootprint() async throws -> LogFootprint {
        try await withTransaction { try RetentionQueries.footprint($0) }
    }

    /// Removes the idempotency keys created more than `window` ago — the commands' and the reload
    /// requests' — `batchSize` per transaction (so appends never wait long behind it), until none
    /// is left. A retry with a removed key is a new command. Returns how many were removed.
    public func expireIdempotencyKeys(olderThan window: Duration, batchSize: Int = 1_000) async throws -> Int {
        var removed = 0
        for expire in [RetentionQueries.expireIdempotencyKeys, RetentionQueries.expireReloadIdempotencyKeys] {
            while true {
                let batch = try await withTransaction { connection in
                    try expire(window, batchSize, connection)
                }
                removed += batch
                if batch < batchSize { break }
            }
        }
        return removed
    }
}

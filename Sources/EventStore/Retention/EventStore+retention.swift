extension EventStore {
    /// Creates the log's partitions ahead of now (`log_partitioning` says how many, how long);
    /// an event can be appended only into a partition that exists. Returns how many it created.
    @discardableResult
    public func createPartitions() async throws -> Int {
        try await withTransaction { try RetentionQueries.createPartitions($0) }
    }

    /// Sets the length of the partitions created from now on (those made keep theirs).
    public func setPartitionInterval(_ interval: Duration) async throws {
        try await withTransaction { try RetentionQueries.setPartitionInterval(interval, $0) }
    }

    /// The bytes of the tables that grow with traffic and the partitions around now.
    public func logFootprint() async throws -> LogFootprint {
        try await withTransaction { try RetentionQueries.footprint($0) }
    }

    /// Removes the idempotency keys created more than `window` ago, `batchSize` per transaction
    /// (so appends never wait long behind it), until none is left. A retry with a removed key is
    /// a new command. Returns how many were removed.
    public func expireIdempotencyKeys(olderThan window: Duration, batchSize: Int = 1_000) async throws -> Int {
        var removed = 0
        while true {
            let batch = try await withTransaction { connection in
                try RetentionQueries.expireIdempotencyKeys(window: window, limit: batchSize, connection)
            }
            removed += batch
            if batch < batchSize { return removed }
        }
    }
}

/// What the log takes in the database: what operators watch to see that it does not grow
/// without end.
public struct LogFootprint: Sendable, Equatable {
    /// The tables that grow with traffic.
    static let growingTables = [
        "events", "activities", "deliveries", "idempotency_keys", "rejections", "push_token_invalidations",
        "push_to_start_token_changes", "reload_token_changes", "reload_tokens", "event_traces", "remote_starts",
    ]

    /// Bytes of each table that grows with traffic, its indexes and partitions included.
    public let bytesByTable: [String: Int]
    /// Partitions of `events` that begin after now: the room appends have.
    public let partitionsAhead: Int
    /// Partitions of `events` that ended before now and are not retired yet: what retention
    /// will retire once their activities are all dismissed and the retention has passed.
    public let partitionsBehind: Int
}

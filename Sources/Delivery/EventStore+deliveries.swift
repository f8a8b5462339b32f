public import ActivityLifecycle
public import EventStore

extension EventStore {
    /// The activity's deliveries (attempts and decisions), newest first, at most `limit`.
    public func deliveries(of stream: StreamID, limit: Int = 100) async throws -> [DeliveryRecord] {
        try await withConnection { try DeliveryQueries.deliveries(of: stream, limit: limit, $0) }
    }

    /// The deliveries of these events that the live table holds, newest first, at most `limit`:
    /// for a stream read from the log or from an archive (the deliveries' partitions are retired
    /// on their own time).
    public func deliveries(of delivered: DeliveredStream, limit: Int) async throws -> [DeliveryRecord] {
        try await withConnection { try DeliveryQueries.deliveries(of: delivered, limit: limit, $0) }
    }
}

public import ActivityLifecycle
public import EventStore

extension EventStore {
    /// The activity's deliveries (attempts and decisions), newest first, at most `limit`.
    public func deliveries(of stream: StreamID, limit: Int = 100) async throws -> [DeliveryRecord] {
        try await withConnection { try DeliveryQueries.deliveries(of: stream, limit: limit, $0) }
    }
}

public import ActivityLifecycle
public import CanonicalJSON

extension EventStore {
    /// `events(after:limit:)`, each event with the trace context of the sampled request that
    /// appended it, when it was (`StoredEvent.traceContext`).
    public func events(after position: Int64, limit: Int, withTraceContexts: Bool) async throws -> [StoredEvent] {
        guard withTraceContexts else { return try await events(after: position, limit: limit) }
        return try await withConnection { try TraceQueries.events(after: position, limit: limit, $0) }
    }

    /// `deliveryHistories(_:)`, each event with the trace context of the sampled request that
    /// appended it, when it was.
    public func deliveryHistories(
        _ requests: [StreamID: HistoryRequest],
        withTraceContexts: Bool
    ) async throws -> StreamHistories {
        guard withTraceContexts else { return try await deliveryHistories(requests) }
        return try await withConnection { connection in
            var histories = try DeliveryQueries.histories(requests, connection)
            let events = histories.events.values.joined()
            let contexts = try TraceQueries.contexts(of: events.map { ($0.position, $0.recordedAt) }, connection)
            guard !contexts.isEmpty else { return histories }
            histories.events = histories.events.mapValues { stream in
                stream.map { $0.traced(contexts[$0.position]) }
            }
            return histories
        }
    }
}

extension EventStore {
    /// The trace contexts kept with these events (by their position and commit time), by
    /// position: those of the events that sampled requests appended.
    public func traceContexts(
        of events: [(position: Int64, recordedAt: Timestamp)]
    ) async throws -> [Int64: TraceContext] {
        try await withConnection { try TraceQueries.contexts(of: events, $0) }
    }
}

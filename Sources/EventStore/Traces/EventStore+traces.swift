public import CanonicalJSON

extension EventStore {
    /// The trace contexts of the sampled requests that appended events at `positions` (each with
    /// its event's commit time), by position; events of unsampled requests, deadlines and
    /// devices have none.
    public func traceContexts(
        of events: [(position: Int64, recordedAt: Timestamp)]
    ) async throws
        -> [Int64: TraceContext]
    {
        guard !events.isEmpty else { return [:] }
        return try await withConnection { try TraceQueries.contexts(of: events, $0) }
    }
}

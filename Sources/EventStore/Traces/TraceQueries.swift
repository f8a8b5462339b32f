import CanonicalJSON
import Postgres

/// The SQL of the trace contexts kept with sampled requests' events (written by the append, in
/// `CommandQueries.append`).
enum TraceQueries {
    /// The trace contexts kept with `events`, by position; the events' commit times narrow the
    /// search to their partitions.
    static func contexts(
        of events: [(position: Int64, recordedAt: Timestamp)],
        _ connection: Connection
    ) throws
        -> [Int64: TraceContext]
    {
        guard let earliest = events.map(\.recordedAt).min(), let latest = events.map(\.recordedAt).max() else {
            return [:]
        }
        var contexts: [Int64: TraceContext] = [:]
        for row in try connection.query(
            """
            SELECT position, traceparent, tracestate FROM event_traces
            WHERE recorded_at BETWEEN \(PostgresTimestamp(earliest)) AND \(PostgresTimestamp(latest))
              AND position = ANY(\(PostgresArray(events.map(\.position))))
            """
        ) {
            contexts[try row.decode("position")] = TraceContext(
                traceparent: try row.decode("traceparent"),
                tracestate: try row.decode("tracestate")
            )
        }
        return contexts
    }
}

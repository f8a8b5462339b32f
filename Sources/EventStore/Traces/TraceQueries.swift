import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of the trace contexts kept with sampled requests' events (written by the append, in
/// `CommandQueries.append`).
enum TraceQueries {
    /// `ReadingQueries.events(after:app:limit:)` for a reader that traces what it does with
    /// them (delivery): each event with the trace context kept with it, in the same statement.
    static func events(after position: Int64, limit: Int, _ connection: Connection) throws -> [StoredEvent] {
        try connection.query(
            """
            SELECT \(columnsOf: EventRow.Column.self, in: "e."), t.traceparent, t.tracestate
            FROM liveline_events_after(\(position), \(limit), NULL) AS e
            -- A probe of the one partition of the event's time per event, never a scan.
            LEFT JOIN LATERAL (
                SELECT traceparent, tracestate FROM event_traces t
                WHERE t.position = e.position AND t.recorded_at = e.recorded_at
            ) AS t ON true
            ORDER BY e.position
            """
        ).map { row in
            try EventRow.storedEvent(row).traced(
                try row.decode("traceparent", as: String?.self).map { traceparent in
                    TraceContext(traceparent: traceparent, tracestate: try row.decode("tracestate"))
                }
            )
        }
    }

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

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
            WITH e AS MATERIALIZED (SELECT * FROM liveline_events_after(\(position), \(limit), NULL))
            SELECT \(columnsOf: EventRow.Column.self, in: "e."), t.traceparent, t.tracestate
            FROM e LEFT JOIN liveline_event_traces(
                (SELECT array_agg(position) FROM e), (SELECT array_agg(recorded_at) FROM e)) AS t USING (position)
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

    /// The trace contexts kept with `events`, by position; each event's commit time leads to its
    /// partition (`liveline_event_traces`).
    static func contexts(
        of events: [(position: Int64, recordedAt: Timestamp)],
        _ connection: Connection
    ) throws
        -> [Int64: TraceContext]
    {
        guard !events.isEmpty else { return [:] }
        var contexts: [Int64: TraceContext] = [:]
        for row in try connection.query(
            """
            SELECT t.position, t.traceparent, t.tracestate FROM liveline_event_traces(
                \(PostgresArray(events.map(\.position))), \(PostgresArray(events.map { PostgresTimestamp($0.recordedAt) })))
                AS t
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

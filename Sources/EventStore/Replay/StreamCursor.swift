import Dispatch
import Postgres

/// Reads the log stream by stream through the open cursor `liveline_log_events`, a batch at a
/// time: each batch is decoded and handed over while the server reads the next one. Memory
/// stays that of two batches and one stream, whatever the size of the log.
enum StreamCursor {
    /// Reads the cursor to the end and closes it. `stream` gets each stream's events in version
    /// order; `afterBatch` the events read so far, after each batch's complete streams.
    static func read(
        batchSize: Int,
        _ connection: Connection,
        stream body: ([StoredEvent]) throws -> Void,
        afterBatch: (Int) throws -> Void
    ) throws -> (events: Int, streams: Int) {
        precondition(batchSize > 0, "a batch holds at least one event")
        var (events, streams) = (0, 0)
        var stream: [StoredEvent] = []
        func take(_ rows: PostgresRows) throws {
            for event in try decode(rows) {
                if let first = stream.first, first.stream != event.stream {
                    try body(stream)
                    streams += 1
                    stream.removeAll(keepingCapacity: true)
                }
                stream.append(event)
            }
        }
        var batch: PostgresRows? = try connection.query(ReplayQueries.fetch(batchSize))
        while let rows = batch {
            if rows.count == batchSize {
                batch = try connection.query(ReplayQueries.fetch(batchSize)) { try take(rows) }.0
            } else {
                try take(rows)
                batch = nil
            }
            events += rows.count
            try afterBatch(events)
        }
        if !stream.isEmpty {
            try body(stream)
            streams += 1
        }
        try ReplayQueries.closeCursor(connection)
        return (events, streams)
    }

    /// The events of a fetched batch, decoded in two halves at once: decoding is most of the
    /// client's work in reading the log, and the thread folding them waits for it.
    private static func decode(_ rows: PostgresRows) throws -> [StoredEvent] {
        let count = rows.count
        guard count >= 1_000 else { return try rows.map(StoreQueries.storedEvent) }
        nonisolated(unsafe) let shared = rows  // only read, by both halves
        nonisolated(unsafe) var halves: [Result<[StoredEvent], any Error>] = [.success([]), .success([])]
        halves.withUnsafeMutableBufferPointer { halves in
            nonisolated(unsafe) let halves = halves
            DispatchQueue.concurrentPerform(iterations: 2) { half in
                let range = half == 0 ? 0..<count / 2 : count / 2..<count
                halves[half] = Result { try range.map { try StoreQueries.storedEvent(shared[$0]) } }
            }
        }
        return try halves[0].get() + halves[1].get()
    }
}

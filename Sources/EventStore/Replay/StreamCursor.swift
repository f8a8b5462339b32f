import Dispatch
import Postgres

/// Reads the log stream by stream through the open cursor `liveline_log_events`, a batch at a
/// time. Three things happen at once: the server reads the next batch, the batch before is
/// folded on other threads, and what was made of the batch before that is handed over on the
/// connection's thread (to be sent with COPY, say). Memory stays that of a few batches and one
/// stream, whatever the size of the log.
enum StreamCursor {
    /// Reads the cursor to the end and closes it.
    ///
    /// Each stream's events, in version order, are folded by `fold` into a part, on two threads
    /// at once: each thread folds half of a batch's whole streams into a part of its own that
    /// starts as `empty`. `afterBatch` gets each batch's parts in stream order and the events
    /// read so far, on the calling thread, with the connection free for its statements.
    static func read<Part: Sendable>(
        batchSize: Int,
        _ connection: Connection,
        empty: Part,
        fold: @escaping @Sendable (inout Part, [StoredEvent]) -> Void,
        afterBatch: ([Part], Int) throws -> Void
    ) throws -> (events: Int, streams: Int) {
        precondition(batchSize > 0, "a batch holds at least one event")
        var (events, streams) = (0, 0)
        // The stream a batch ended in, which the next batch may continue.
        var unfinished: [StoredEvent] = []
        func take(_ rows: PostgresRows, isLast: Bool) throws -> [Part] {
            var complete: [[StoredEvent]] = []
            for event in try decode(rows) {
                if let first = unfinished.first, first.stream != event.stream {
                    complete.append(unfinished)
                    unfinished = []
                }
                unfinished.append(event)
            }
            if isLast, !unfinished.isEmpty {
                complete.append(unfinished)
                unfinished = []
            }
            streams += complete.count
            return folded(complete, empty: empty, fold)
        }
        var batch: PostgresRows? = try connection.query(ReplayQueries.fetch(batchSize))
        var previous: (parts: [Part], events: Int)?
        while let rows = batch {
            let isLast = rows.count < batchSize
            let (next, parts) = try connection.run { connection in
                if let previous { try afterBatch(previous.parts, previous.events) }
                return isLast ? nil : try connection.query(ReplayQueries.fetch(batchSize))
            } while: {
                try take(rows, isLast: isLast)
            }
            events += rows.count
            previous = (parts, events)
            batch = next
        }
        if let previous { try afterBatch(previous.parts, previous.events) }
        try ReplayQueries.closeCursor(connection)
        return (events, streams)
    }

    /// `streams` folded in two halves at once; the parts in stream order.
    private static func folded<Part: Sendable>(
        _ streams: [[StoredEvent]],
        empty: Part,
        _ fold: @Sendable (inout Part, [StoredEvent]) -> Void
    ) -> [Part] {
        let count = streams.count
        guard count >= 100 else {
            var part = empty
            for stream in streams { fold(&part, stream) }
            return [part]
        }
        nonisolated(unsafe) var parts = [empty, empty]
        parts.withUnsafeMutableBufferPointer { parts in
            nonisolated(unsafe) let parts = parts
            DispatchQueue.concurrentPerform(iterations: 2) { half in
                // A part of the thread's own until the end: two parts side by side in memory,
                // written by both threads at once, would share cache lines.
                var part = empty
                for stream in streams[half == 0 ? 0..<count / 2 : count / 2..<count] { fold(&part, stream) }
                parts[half] = part
            }
        }
        return parts
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

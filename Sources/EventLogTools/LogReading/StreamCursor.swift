import ActivityLifecycle
import CanonicalJSON
import Dispatch
import EventStore
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
            var parts: [Part] = []
            var start = 0
            if let carried = unfinished.first?.stream {
                if !rows.isEmpty, try EventRow.streamID(rows[0]) == carried {
                    start = runEnd(of: rows, from: 0, before: rows.count)
                    unfinished += try decode(rows, 0..<start, of: carried)
                }
                if start < rows.count || isLast {
                    var part = empty
                    fold(&part, unfinished)
                    parts.append(part)
                    streams += 1
                    unfinished = []
                }
            }
            // The batch's last stream may go on in the next batch, unless this is the last.
            var end = rows.count
            if !isLast, end > start {
                end -= 1
                while end > start, rows.hasSameValues(end - 1, as: end, in: EventRow.streamColumns) { end -= 1 }
            }
            let whole = try folded(rows, start..<end, empty: empty, fold)
            parts += whole.map(\.part)
            streams += whole.reduce(0) { $0 + $1.streams }
            if end < rows.count {
                unfinished = try decode(rows, end..<rows.count, of: EventRow.streamID(rows[end]))
            }
            return parts
        }
        var batch: PostgresRows? = try connection.query(LogCursorQueries.fetch(batchSize))
        var previous: (parts: [Part], events: Int)?
        while let rows = batch {
            let isLast = rows.count < batchSize
            let (next, parts) = try connection.run { connection in
                if let previous { try afterBatch(previous.parts, previous.events) }
                return isLast ? nil : try connection.query(LogCursorQueries.fetch(batchSize))
            } while: {
                try take(rows, isLast: isLast)
            }
            events += rows.count
            previous = (parts, events)
            batch = next
        }
        if let previous { try afterBatch(previous.parts, previous.events) }
        try LogCursorQueries.closeCursor(connection)
        return (events, streams)
    }

    /// Where the stream of row `start` ends: the first later row of another stream, or `end`.
    private static func runEnd(of rows: PostgresRows, from start: Int, before end: Int) -> Int {
        var index = start + 1
        while index < end, rows.hasSameValues(index, as: start, in: EventRow.streamColumns) { index += 1 }
        return index
    }

    /// The events in `range`, all of `stream`.
    private static func decode(_ rows: PostgresRows, _ range: Range<Int>, of stream: StreamID) throws -> [StoredEvent] {
        try range.map { try EventRow.storedEvent(rows[$0], of: stream) }
    }

    /// The whole streams in `range` decoded and folded, in two halves at once (split between two
    /// streams) when there are enough: each half's part, in stream order, and its stream count.
    /// Decoding is most of the client's work in reading the log.
    private static func folded<Part: Sendable>(
        _ rows: PostgresRows,
        _ range: Range<Int>,
        empty: Part,
        _ fold: @Sendable (inout Part, [StoredEvent]) -> Void
    ) throws -> [(part: Part, streams: Int)] {
        // Rows are only read, by both halves.
        nonisolated(unsafe) let rows = rows
        @Sendable func foldStreams(in range: Range<Int>) throws -> (part: Part, streams: Int) {
            var (part, streams) = (empty, 0)
            var start = range.lowerBound
            while start < range.upperBound {
                let end = runEnd(of: rows, from: start, before: range.upperBound)
                fold(&part, try decode(rows, start..<end, of: EventRow.streamID(rows[start])))
                streams += 1
                start = end
            }
            return (part, streams)
        }
        guard range.count >= 1_000 else { return [try foldStreams(in: range)] }
        let middle = runEnd(of: rows, from: range.lowerBound + range.count / 2 - 1, before: range.upperBound)
        let halves = [range.lowerBound..<middle, middle..<range.upperBound]
        // Each result is written by its own half only.
        nonisolated(unsafe) var results: [Result<(part: Part, streams: Int), any Error>] = [
            .success((empty, 0)), .success((empty, 0)),
        ]
        results.withUnsafeMutableBufferPointer { results in
            nonisolated(unsafe) let results = results
            DispatchQueue.concurrentPerform(iterations: 2) { half in
                // A part of the thread's own until the end: two parts side by side in memory,
                // written by both threads at once, would share cache lines.
                let result = Result { try foldStreams(in: halves[half]) }
                results[half] = result
            }
        }
        return try results.map { try $0.get() }
    }
}

import ActivityLifecycle
import Postgres

/// Reads the log stream by stream through the open cursor `liveline_log_events`, a batch at a
/// time. Three things happen at once: the server reads the next batch, the batch before is
/// folded on two `FoldingThreads`, and what was made of the batch before that is handed over on
/// the connection's thread (to be sent with COPY, say). Memory stays that of a few batches and
/// one stream, whatever the size of the log.
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
        let threads = FoldingThreads()
        defer { threads.shutDown() }
        var (events, streams) = (0, 0)
        // The stream a batch ended in, which the next batch may continue.
        var unfinished: [StoredEvent] = []
        var batch: PostgresRows? = try connection.query(LogCursorQueries.fetch(batchSize))
        var previous: (parts: [Part], events: Int)?
        while let rows = batch {
            let isLast = rows.count < batchSize
            let (next, taken) = try threads.run {
                if let previous { try afterBatch(previous.parts, previous.events) }
                return isLast ? nil : try connection.query(LogCursorQueries.fetch(batchSize))
            } meanwhile: { [unfinished] in
                try take(rows, isLast: isLast, after: unfinished, empty: empty, fold, threads)
            }
            events += rows.count
            streams += taken.streams
            unfinished = taken.unfinished
            previous = (taken.parts, events)
            batch = next
        }
        if let previous { try afterBatch(previous.parts, previous.events) }
        try LogCursorQueries.closeCursor(connection)
        return (events, streams)
    }

    /// What a batch made: the parts of the streams it completed, how many, and the events of the
    /// stream it ended in, which the next batch may continue.
    private struct Taken<Part: Sendable>: Sendable {
        var parts: [Part] = []
        var streams = 0
        var unfinished: [StoredEvent] = []
    }

    /// Folds the streams a batch completes: first the one `unfinished` began in the batch
    /// before, then the batch's own whole streams.
    @Sendable
    private static func take<Part: Sendable>(
        _ rows: PostgresRows,
        isLast: Bool,
        after unfinished: [StoredEvent],
        empty: Part,
        _ fold: @escaping @Sendable (inout Part, [StoredEvent]) -> Void,
        _ threads: FoldingThreads
    ) throws -> Taken<Part> {
        var taken = Taken<Part>()
        var start = 0
        if let carried = unfinished.first?.stream {
            var stream = unfinished
            if !rows.isEmpty, try EventRow.streamID(rows[0]) == carried {
                start = runEnd(of: rows, from: 0, before: rows.count)
                stream += try decode(rows, 0..<start, of: carried)
            }
            if start < rows.count || isLast {
                var part = empty
                fold(&part, stream)
                taken.parts.append(part)
                taken.streams += 1
            } else {
                taken.unfinished = stream
            }
        }
        // The batch's last stream may go on in the next batch, unless this is the last.
        var end = rows.count
        if !isLast, end > start {
            end -= 1
            while end > start, rows.hasSameValues(end - 1, as: end, in: EventRow.streamColumns) { end -= 1 }
        }
        for whole in try folded(rows, start..<end, empty: empty, fold, threads) {
            taken.parts.append(whole.part)
            taken.streams += whole.streams
        }
        if end < rows.count {
            taken.unfinished = try decode(rows, end..<rows.count, of: EventRow.streamID(rows[end]))
        }
        return taken
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
        _ fold: @escaping @Sendable (inout Part, [StoredEvent]) -> Void,
        _ threads: FoldingThreads
    ) throws -> [(part: Part, streams: Int)] {
        // Each half folds into a part of its own, returned at the end: two parts side by side
        // in memory, written by both threads at once, would share cache lines.
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
        let (first, second) = try threads.run {
            try foldStreams(in: range.lowerBound..<middle)
        } meanwhile: {
            try foldStreams(in: middle..<range.upperBound)
        }
        return [first, second]
    }
}

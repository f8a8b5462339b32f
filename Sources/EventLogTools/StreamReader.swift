public import EventStore

/// Reads the whole log one stream at a time, in batches, so that memory stays that of one batch
/// and one stream whatever the size of the log.
public struct StreamReader: Sendable {
    public let store: EventStore
    public let batchSize: Int

    public init(store: EventStore, batchSize: Int = 10_000) {
        self.store = store
        self.batchSize = batchSize
    }

    /// Calls `body` with each stream's events in version order; `progress` with the events read
    /// so far. Returns how many events and streams there were.
    public func forEachStream(
        progress: (Int) -> Void = { _ in },
        _ body: ([StoredEvent]) async throws -> Void
    ) async throws -> (events: Int, streams: Int) {
        var events = 0
        var streams = 0
        var stream: [StoredEvent] = []
        var last: StoredEvent?
        while true {
            let batch = try await store.eventsInStreamOrder(after: last, limit: batchSize)
            for event in batch {
                if let first = stream.first, first.stream != event.stream {
                    try await body(stream)
                    streams += 1
                    stream.removeAll(keepingCapacity: true)
                }
                stream.append(event)
            }
            events += batch.count
            progress(events)
            guard batch.count == batchSize, let end = batch.last else { break }
            last = end
        }
        if !stream.isEmpty {
            try await body(stream)
            streams += 1
        }
        return (events, streams)
    }
}

import Postgres

extension EventStore {
    /// Folds every stream of the log, in version order, with `fold`: read in one snapshot
    /// through a server-side cursor (`StreamCursor`), so memory stays that of a batch and a
    /// stream. Streams are folded on two threads at once, each into a state of its own that
    /// starts as `empty`; `merge` adds such a state to the result, in stream order. `progress`
    /// gets the events read so far. Returns the result, and how many events and streams there
    /// were.
    public func foldStreams<State: Sendable>(
        from empty: State,
        batchSize: Int = 10_000,
        progress: @escaping @Sendable (Int) -> Void = { _ in },
        fold: @escaping @Sendable (inout State, [StoredEvent]) -> Void,
        merge: @escaping @Sendable (inout State, State) -> Void
    ) async throws -> (state: State, events: Int, streams: Int) {
        try await withConnection { connection in
            try connection.transaction(isolation: .repeatableRead) { connection in
                var state = empty
                try LogCursorQueries.openCursorOnLog(app: nil, connection)
                let (events, streams) = try StreamCursor.read(
                    batchSize: batchSize,
                    connection,
                    empty: empty,
                    fold: fold
                ) { parts, events in
                    for part in parts { merge(&state, part) }
                    progress(events)
                }
                return (state, events, streams)
            }
        }
    }
}

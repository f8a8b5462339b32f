import Postgres

extension EventStore {
    /// Folds every stream of the log, in version order, into `state`: read in one snapshot
    /// through a server-side cursor (`StreamCursor`), so memory stays that of a batch and a
    /// stream. `progress` gets the events read so far. Returns the state, and how many events
    /// and streams there were.
    public func foldStreams<State: Sendable>(
        into initial: State,
        batchSize: Int = 10_000,
        progress: @escaping @Sendable (Int) -> Void = { _ in },
        _ update: @escaping @Sendable (inout State, [StoredEvent]) -> Void
    ) async throws -> (state: State, events: Int, streams: Int) {
        try await pool.withConnection { connection in
            try connection.transaction(isolation: .repeatableRead) { connection in
                var state = initial
                try ReplayQueries.openCursorOnLog(app: nil, connection)
                let (events, streams) = try StreamCursor.read(batchSize: batchSize, connection) {
                    update(&state, $0)
                } afterBatch: {
                    progress($0)
                }
                return (state, events, streams)
            }
        }
    }
}

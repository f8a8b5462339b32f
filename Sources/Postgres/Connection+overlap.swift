internal import CLibPQ

extension Connection {
    /// Runs `query` on the server while this thread runs `work`: sends the statement, runs
    /// `work`, then waits for the rows. For a client that has its own work between statements,
    /// such as decoding one batch of a cursor while the server reads the next.
    ///
    /// The rows are always waited for, even when `work` throws (then its error is thrown), so
    /// the session is ready for the next statement either way.
    public func query<T>(_ query: PostgresQuery, while work: () throws -> T) throws -> (PostgresRows, T) {
        let name = try preparedName(for: query)
        let sent = Self.withParameters(query) { _, values, lengths, formats in
            PQsendQueryPrepared(handle, name, Int32(query.bindings.count), values, lengths, formats, 1)
        }
        guard sent == 1 else { throw PostgresError(code: .connectionFailure, message: lastErrorMessage) }
        let done = Result { try work() }
        // The statement's result, then NULL; only the first one is the statement's.
        var rows: Result<PostgresRows, any Error>?
        while let result = PQgetResult(handle) {
            if rows == nil {
                rows = Result { try check(result, query: query.sql) }
            } else {
                PQclear(result)
            }
        }
        let value = try done.get()
        return (try (rows ?? .failure(PostgresError(code: .connectionFailure, message: lastErrorMessage))).get(), value)
    }
}

internal import CLibPQ

/// A connection lent to a task that runs on the pool's `QueryLoop`
/// (`ConnectionPool.withAsyncConnection`): the statements of `Connection`, awaited instead of
/// blocking a thread. While the server works, the task is suspended and the loop's thread runs
/// other tasks.
///
/// Used by one task at a time, as the pool guarantees by lending it to one caller at a time.
public struct AsyncConnection: Sendable {
    let connection: Connection
    let loop: QueryLoop

    /// Runs one statement with its parameters and returns its rows (binary format). Each
    /// distinct statement is prepared once per session, as `Connection.query` does.
    @discardableResult
    public func query(_ query: PostgresQuery) async throws -> PostgresRows {
        let handle = connection.handle
        let statement = connection.preparedStatement(for: query)
        if !statement.isPrepared {
            let types = statement.parameterTypes
            try await answer(to: query.sql) {
                PQsendPrepare(handle, statement.name, query.sql, Int32(types.count), types.isEmpty ? nil : types)
            }
            connection.remember(statement)
        }
        return try await answer(to: query.sql) {
            Connection.withParameters(query) { _, values, lengths, formats in
                PQsendQueryPrepared(handle, statement.name, Int32(query.bindings.count), values, lengths, formats, 1)
            }
        }
    }

    /// Runs one statement and returns the number of rows it affected.
    @discardableResult
    public func execute(_ query: PostgresQuery) async throws -> Int {
        try await self.query(query).affectedRows
    }

    /// Runs trusted SQL without parameters (simple query protocol), as
    /// `Connection.executeScript` does.
    public func executeScript(_ script: String) async throws {
        let handle = connection.handle
        try await answer(to: script) { PQsendQuery(handle, script) }
    }

    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    @discardableResult
    public func transaction<T>(
        isolation: IsolationLevel = .readCommitted,
        _ body: (AsyncConnection) async throws -> T
    ) async throws -> T {
        try await executeScript(isolation.beginStatement)
        let value: T
        do {
            value = try await body(self)
        } catch {
            await rollbackIgnoringErrors()
            throw error
        }
        if let error = connection.abortedTransaction {
            await rollbackIgnoringErrors()
            throw error
        }
        try await executeScript("COMMIT")
        return value
    }

    private func rollbackIgnoringErrors() async {
        if PQstatus(connection.handle) == CONNECTION_OK {
            try? await executeScript("ROLLBACK")
        }
    }

    /// Sends a statement with `send`, waits for the whole answer and returns it as
    /// `PQexec` would: the last result, or the first error.
    @discardableResult
    private func answer(to sql: String, sending send: () -> Int32) async throws -> PostgresRows {
        let handle = connection.handle
        guard send() == 1 else {
            return try connection.check(nil, query: sql)
        }
        var kept: OpaquePointer?
        while true {
            await loop.awaitAnswer(on: connection)
            guard let result = PQgetResult(handle) else { break }
            if let previous = kept, PQresultStatus(previous) == PGRES_FATAL_ERROR {
                PQclear(result)
            } else {
                PQclear(kept)
                kept = result
            }
        }
        return try connection.check(kept, query: sql)
    }
}

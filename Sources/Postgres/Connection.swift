internal import CLibPQ
import Foundation

/// One PostgreSQL session, through libpq.
///
/// Every method blocks the calling thread until the server answers, so a `Connection` is only
/// ever used on a thread of its own — `ConnectionPool` runs bodies on its dedicated threads,
/// never on Swift's cooperative pool. A connection is used by one thread at a time; the pool
/// guarantees that by lending it to one caller at a time, which is why it may cross threads.
public final class Connection: @unchecked Sendable {
    let handle: OpaquePointer
    /// Statements prepared on this session, by text and parameter types.
    private var prepared: [PreparedKey: String] = [:]

    private init(handle: OpaquePointer) {
        self.handle = handle
        // libpq prints server notices (e.g. "relation already exists, skipping") to stderr by
        // default; they are informational and must not pollute a server's output.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit {
        PQfinish(handle)
    }

    /// Opens a session. Blocks until connected or failed.
    ///
    /// - Parameter connectionString: a URL (`postgres://user@host:5432/db?sslmode=disable`) or a
    ///   conninfo string (`host=/tmp dbname=liveline`).
    public static func connect(_ connectionString: String) throws -> Connection {
        try ConnectionString.validate(connectionString)
        // Keywords before `dbname` are defaults: values in the expanded connection string win.
        let keywords = ["fallback_application_name", "connect_timeout", "dbname"]
        let values = ["liveline", "10", connectionString]
        let handle = withCStringArray(keywords) { keywords in
            withCStringArray(values) { values in
                PQconnectdbParams(keywords, values, 1)
            }
        }
        guard let handle else {
            throw PostgresError(code: .connectionFailure, message: "out of memory allocating a connection")
        }
        let connection = Connection(handle: handle)
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(code: .connectionFailure, message: connection.lastErrorMessage)
        }
        return connection
    }

    /// Runs one statement with its parameters and returns its rows (binary format).
    @discardableResult
    ///
    /// Each distinct statement is prepared once per connection and executed by name afterwards,
    /// so the server parses and plans it once. (Statements are string literals in the code, so
    /// there are only ever as many as the code has.)
    public func query(_ query: PostgresQuery) throws -> PostgresRows {
        let name = try preparedName(for: query)
        let result = Self.withParameters(query) { _, values, lengths, formats in
            PQexecPrepared(handle, name, Int32(query.bindings.count), values, lengths, formats, 1)
        }
        return try check(result, query: query.sql)
    }

    /// The name of the prepared statement for `query`'s text and parameter types, preparing it
    /// on first use.
    func preparedName(for query: PostgresQuery) throws -> String {
        let key = PreparedKey(sql: query.sql, types: query.bindings.map(\.type))
        if let name = prepared[key] { return name }
        let name = "liveline_\(prepared.count + 1)"
        let types = key.types.map { Oid($0.rawValue) }
        let result = PQprepare(handle, name, query.sql, Int32(types.count), types.isEmpty ? nil : types)
        PQclear(try check(result, query: query.sql).release())
        prepared[key] = name
        return name
    }

    /// Runs one statement and returns the number of rows it affected.
    @discardableResult
    public func execute(_ query: PostgresQuery) throws -> Int {
        try self.query(query).affectedRows
    }

    /// Runs a script of one or more statements without parameters (simple query protocol).
    ///
    /// For trusted SQL that ships with Liveline, such as migration files; never for SQL built
    /// from input.
    public func executeScript(_ script: String) throws {
        let result = PQexec(handle, script)
        _ = try check(result, query: script)
    }

    /// Runs a statement that takes no parameters and is not worth preparing, through the simple
    /// query protocol: a change of the schema that names a table that changes each time (a
    /// partition's), or one that must run outside any transaction (`DETACH … CONCURRENTLY`).
    /// It may interpolate identifiers and literals, never values.
    public func executeUnprepared(_ query: PostgresQuery) throws {
        precondition(query.bindings.isEmpty, "an unprepared statement takes no parameters")
        try executeScript(query.sql)
    }

    /// Runs `body` in a transaction: commits when it returns, rolls back when it throws.
    public func transaction<T>(
        isolation: IsolationLevel = .readCommitted,
        _ body: (Connection) throws -> T
    ) throws -> T {
        try executeScript(isolation.beginStatement)
        let value: T
        do {
            value = try body(self)
        } catch {
            rollbackIgnoringErrors()
            throw error
        }
        // A statement that failed inside `body` but whose error was swallowed leaves the
        // transaction aborted; COMMIT would then silently roll back. Refuse to pretend.
        if PQtransactionStatus(handle) == PQTRANS_INERROR {
            rollbackIgnoringErrors()
            throw PostgresError(
                code: .server,
                sqlState: SQLState(rawValue: "25P02"),
                message: "transaction aborted by an earlier failed statement; rolled back"
            )
        }
        try executeScript("COMMIT")
        return value
    }

    /// Whether an idle session still looks alive, without a round trip.
    ///
    /// Nothing arrives on an idle session unasked, except the server's notice that it is ending
    /// the session (shutdown, restart, `pg_terminate_backend`, idle timeout) followed by the
    /// closed socket. So a readable socket means the session is gone.
    var isUsable: Bool {
        guard PQstatus(handle) == CONNECTION_OK else { return false }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) == 0
    }

    /// Whether the session is idle, outside any transaction, and can be lent out again.
    var isIdle: Bool {
        PQstatus(handle) == CONNECTION_OK && PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// Closes the broken session and opens a new one with the same parameters. Blocks.
    func reset() throws {
        PQreset(handle)
        prepared.removeAll()  // a new session has none
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(code: .connectionFailure, message: lastErrorMessage)
        }
    }

    private func rollbackIgnoringErrors() {
        if PQstatus(handle) == CONNECTION_OK {
            PQclear(PQexec(handle, "ROLLBACK"))
        }
    }

    var lastErrorMessage: String {
        String(cString: PQerrorMessage(handle)).trimmingTrailingWhitespace()
    }

    /// Turns a libpq result into rows, or into a `PostgresError` carrying everything the server said.
    func check(_ result: OpaquePointer?, query: String) throws -> PostgresRows {
        guard let result else {
            var error = PostgresError(code: .connectionFailure, message: lastErrorMessage)
            error.query = query
            throw error
        }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            return PostgresRows(result: result)
        default:
            defer { PQclear(result) }
            throw error(from: result, query: query)
        }
    }

    private func error(from result: OpaquePointer, query: String) -> PostgresError {
        // The PG_DIAG_* field codes are single characters ('C' is the SQLSTATE, 'M' the message…).
        func field(_ code: Unicode.Scalar) -> String? {
            PQresultErrorField(result, Int32(code.value)).map { String(cString: $0) }
        }
        let sqlState = field("C").map(SQLState.init(rawValue:))
        let broken = PQstatus(handle) != CONNECTION_OK
        let message =
            field("M")
            ?? String(cString: PQresultErrorMessage(result)).trimmingTrailingWhitespace()
        var error = PostgresError(
            code: broken || sqlState?.isConnectionFailure == true ? .connectionFailure : .server,
            sqlState: sqlState,
            message: message.isEmpty ? lastErrorMessage : message
        )
        error.detail = field("D")
        error.hint = field("H")
        error.constraint = field("n")
        error.table = field("t")
        error.column = field("c")
        error.query = query
        return error
    }

    /// Lays out the parameters as the four parallel C arrays `PQexecParams` takes.
    static func withParameters<R>(
        _ query: PostgresQuery,
        _ body: (
            UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?
        ) -> R
    ) -> R {
        let bindings = query.bindings
        guard !bindings.isEmpty else { return body(nil, nil, nil, nil) }
        let types = bindings.map { Oid($0.type.rawValue) }
        let lengths = bindings.map { Int32($0.bytes?.count ?? 0) }
        let formats = [Int32](repeating: 1, count: bindings.count)
        // One contiguous buffer holds every value; the pointers index into it.
        let storage = bindings.reduce(into: [UInt8]()) { $0 += $1.bytes ?? [] }
        return storage.withUnsafeBufferPointer { storage in
            let base = UnsafeRawPointer(storage.baseAddress ?? UnsafePointer(bitPattern: 1)!)
            var offset = 0
            let values: [UnsafePointer<CChar>?] = bindings.map { binding in
                guard let bytes = binding.bytes else { return nil }
                defer { offset += bytes.count }
                return (base + offset).assumingMemoryBound(to: CChar.self)
            }
            return body(types, values, lengths, formats)
        }
    }
}

/// What identifies a prepared statement: its text and its parameters' types.
private struct PreparedKey: Hashable {
    let sql: String
    let types: [PostgresType]
}

/// Runs `body` with a NULL-terminated C array of C strings.
private func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
    let duplicates = strings.map { strdup($0) }
    defer {
        for pointer in duplicates { free(pointer) }
    }
    let pointers = duplicates.map { UnsafePointer($0) } + [nil]
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

extension String {
    func trimmingTrailingWhitespace() -> String {
        var text = self
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return text
    }
}

internal import CLibPQ

extension Connection {
    /// Runs a `COPY … FROM STDIN` statement (text format) and sends it `rows`, one piece after
    /// another; returns how many rows the server stored. On any error the statement fails as a
    /// whole, storing nothing.
    ///
    /// The statement is trusted SQL that ships with Liveline, like `executeScript`'s.
    @discardableResult
    public func copyIn(_ statement: String, rows pieces: [CopyTextRows]) throws -> Int {
        let started = PQexec(handle, statement)
        guard let started, PQresultStatus(started) == PGRES_COPY_IN else {
            // Not in COPY mode: `check` turns the result into the server's error.
            _ = try check(started, query: statement)
            throw PostgresError(code: .server, message: "\(statement) did not start a COPY FROM STDIN")
        }
        PQclear(started)
        let sent = pieces.allSatisfy { rows in
            rows.bytes.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) }
            } == 1
        }
        let ended = sent ? PQputCopyEnd(handle, nil) : PQputCopyEnd(handle, "the client failed to send data")
        // The final result says whether the server accepted the rows; then libpq returns NULL.
        var outcome: Result<Int, any Error> = .failure(
            PostgresError(code: .connectionFailure, message: lastErrorMessage)
        )
        if ended == 1 {
            while let result = PQgetResult(handle) {
                outcome = Result { try check(result, query: statement).affectedRows }
            }
        }
        return try outcome.get()
    }
}

extension Connection {
    /// Runs a `COPY … TO STDOUT` statement and hands each piece of its output to `consume`, in
    /// order, as it arrives (a piece is one row in libpq); returns how many rows the server sent.
    /// When `consume` throws, the rest of the output is read and dropped, and the error is thrown.
    ///
    /// COPY takes no parameters: the statement may interpolate identifiers, never values.
    @discardableResult
    public func copyOut(_ query: PostgresQuery, into consume: (UnsafeRawBufferPointer) throws -> Void) throws -> Int {
        precondition(query.bindings.isEmpty, "COPY takes no parameters")
        let statement = query.sql
        let started = PQexec(handle, statement)
        guard let started, PQresultStatus(started) == PGRES_COPY_OUT else {
            _ = try check(started, query: statement)
            throw PostgresError(code: .server, message: "\(statement) did not start a COPY TO STDOUT")
        }
        PQclear(started)
        var consumerError: (any Error)?
        while true {
            var buffer: UnsafeMutablePointer<CChar>?
            let length = PQgetCopyData(handle, &buffer, 0)
            guard length >= 0, let buffer else { break }
            defer { PQfreemem(buffer) }
            if consumerError == nil {
                do {
                    try consume(UnsafeRawBufferPointer(start: buffer, count: Int(length)))
                } catch {
                    consumerError = error
                }
            }
        }
        // -1: the COPY is done and its result follows; -2: the connection failed.
        var outcome: Result<Int, any Error> = .failure(
            PostgresError(code: .connectionFailure, message: lastErrorMessage)
        )
        while let result = PQgetResult(handle) {
            outcome = Result { try check(result, query: statement).affectedRows }
        }
        if let consumerError { throw consumerError }
        return try outcome.get()
    }
}

/// Rows in `COPY`'s text format, built in memory: each value escaped, columns separated by tabs,
/// rows ended by newlines, `\N` for NULL. A row is built field by field (`appendField`, then
/// `endRow`).
public struct CopyTextRows: Sendable {
    public private(set) var bytes: [UInt8] = []
    /// Complete rows.
    public private(set) var count = 0
    /// Whether the row being built has a field yet.
    private var rowHasField = false

    public init() {}

    public var isEmpty: Bool { count == 0 }

    /// Appends a text field to the row being built (`nil` is NULL).
    public mutating func appendField(_ text: String?) {
        guard var text else {
            appendNull()
            return
        }
        text.withUTF8 { appendField(escaping: $0) }
    }

    /// Appends a field given as UTF-8 text to the row being built.
    public mutating func appendField(utf8: [UInt8]) {
        utf8.withUnsafeBufferPointer { appendField(escaping: $0) }
    }

    /// Ends the row being built.
    public mutating func endRow() {
        bytes.append(UInt8(ascii: "\n"))
        count += 1
        rowHasField = false
    }

    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        count = 0
        rowHasField = false
    }

    private mutating func startField() {
        if rowHasField { bytes.append(UInt8(ascii: "\t")) }
        rowHasField = true
    }

    private mutating func appendNull() {
        startField()
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(UInt8(ascii: "N"))
    }

    private mutating func appendField(escaping text: UnsafeBufferPointer<UInt8>) {
        startField()
        bytes.reserveCapacity(bytes.count + text.count)
        for byte in text {
            let escaped: UInt8? =
                switch byte {
                case UInt8(ascii: "\\"): UInt8(ascii: "\\")
                case UInt8(ascii: "\n"): UInt8(ascii: "n")
                case UInt8(ascii: "\r"): UInt8(ascii: "r")
                case UInt8(ascii: "\t"): UInt8(ascii: "t")
                default: nil
                }
            if let escaped {
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(escaped)
            } else {
                bytes.append(byte)
            }
        }
    }
}

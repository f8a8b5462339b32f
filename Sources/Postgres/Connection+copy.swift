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

/// Rows in `COPY`'s text format, built in memory: each value escaped, columns separated by tabs,
/// rows ended by newlines, `\N` for NULL.
public struct CopyTextRows: Sendable {
    public private(set) var bytes: [UInt8] = []
    public private(set) var count = 0

    public init() {}

    public var isEmpty: Bool { count == 0 }

    /// Appends a row of text values (`nil` is NULL).
    public mutating func append(_ values: [String?]) {
        append(values.map { $0.map { Array($0.utf8) } })
    }

    /// Appends a row of values given as UTF-8 text (`nil` is NULL).
    public mutating func append(_ values: [[UInt8]?]) {
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: "\t")) }
            guard let value else {
                bytes += [UInt8(ascii: "\\"), UInt8(ascii: "N")]
                continue
            }
            for byte in value {
                switch byte {
                case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case UInt8(ascii: "\n"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case UInt8(ascii: "\r"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                case UInt8(ascii: "\t"): bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                default: bytes.append(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\n"))
        count += 1
    }

    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        count = 0
    }
}

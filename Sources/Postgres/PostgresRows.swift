internal import CLibPQ
import Foundation

/// The rows a statement returned. Owns the libpq result and frees it when released.
///
/// Read-only once made, so it may be read from several threads at once, as libpq allows for a
/// result ("PGresult objects are normally read-only after creation, and so can be passed around
/// freely between threads"); it needs no connection.
public final class PostgresRows: RandomAccessCollection, @unchecked Sendable {
    private let result: OpaquePointer
    public let count: Int
    /// The number of rows the statement affected (INSERT, UPDATE, DELETE, …), or 0.
    public let affectedRows: Int
    private let columnNames: [String]

    init(result: OpaquePointer) {
        self.result = result
        self.count = Int(PQntuples(result))
        self.affectedRows = Int(String(cString: PQcmdTuples(result))) ?? 0
        self.columnNames = (0..<PQnfields(result)).map { String(cString: PQfname(result, $0)) }
    }

    private var ownsResult = true

    deinit {
        if ownsResult { PQclear(result) }
    }

    /// Hands the libpq result to the caller, who must clear it.
    func release() -> OpaquePointer {
        ownsResult = false
        return result
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    public subscript(position: Int) -> PostgresRow {
        precondition(position >= 0 && position < count, "row index out of range")
        return PostgresRow(rows: self, index: Int32(position))
    }

    /// The only row, or `nil` if there is none; more than one row is a programming error caught here.
    public var single: PostgresRow? {
        precondition(count <= 1, "expected at most one row, got \(count)")
        return first
    }

    /// Whether two rows hold the same bytes in `columns` (NULL equals only NULL), without
    /// decoding them.
    public func hasSameValues(_ row: Int, as other: Int, in columns: ClosedRange<Int>) -> Bool {
        precondition(indices.contains(row) && indices.contains(other), "row index out of range")
        let (first, second) = (Int32(row), Int32(other))
        for column in columns {
            let field = Int32(column)
            let isNull = PQgetisnull(result, first, field)
            guard isNull == PQgetisnull(result, second, field) else { return false }
            if isNull == 1 { continue }
            let length = PQgetlength(result, first, field)
            guard length == PQgetlength(result, second, field),
                memcmp(PQgetvalue(result, first, field), PQgetvalue(result, second, field), Int(length)) == 0
            else { return false }
        }
        return true
    }

    func columnIndex(named name: String) -> Int? {
        columnNames.firstIndex(of: name)
    }

    var columnCount: Int { columnNames.count }

    /// The value at `row` and `column`, or `nil` for NULL. Not generic, so that the generic
    /// `decode` around it can be inlined and specialised where it is called.
    @usableFromInline
    func value(row: Int32, column: Int) throws -> PostgresValue? {
        guard column >= 0 && column < columnNames.count else {
            throw PostgresError(code: .decoding, message: "no column \(column) in a result of \(columnNames.count)")
        }
        let field = Int32(column)
        if PQgetisnull(result, row, field) == 1 { return nil }
        let length = Int(PQgetlength(result, row, field))
        let bytes = UnsafeRawBufferPointer(start: PQgetvalue(result, row, field), count: length)
        let type = PostgresType(rawValue: PQftype(result, field))
        return PostgresValue(type: type, bytes: bytes, column: columnNames[column])
    }

    @usableFromInline
    func nullError(_ target: Any.Type, column: Int) -> PostgresError {
        PostgresError(code: .decoding, message: "column \"\(columnNames[column])\" is NULL, expected \(target)")
    }

    @inlinable
    func decode<T: PostgresDecodable>(_: T.Type, row: Int32, column: Int) throws -> T {
        guard let value = try value(row: row, column: column) else {
            guard let null = T.postgresNull else { throw nullError(T.self, column: column) }
            return null
        }
        return try T(postgresValue: value)
    }
}

/// One row of a `PostgresRows`.
public struct PostgresRow {
    @usableFromInline let rows: PostgresRows
    @usableFromInline let index: Int32

    /// Decodes the value at a zero-based column position.
    @inlinable
    public func decode<T: PostgresDecodable>(_ column: Int, as type: T.Type = T.self) throws -> T {
        try rows.decode(type, row: index, column: column)
    }

    /// Decodes the value of `column`, one of the columns a statement selected, in order, with
    /// `\(columnsOf:)`.
    @inlinable
    public func decode<T: PostgresDecodable, Column: SQLColumns & RawRepresentable<Int>>(
        _ column: Column,
        as type: T.Type = T.self
    ) throws -> T {
        try rows.decode(type, row: index, column: column.rawValue)
    }

    /// Decodes the value of the named column.
    public func decode<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T {
        guard let position = rows.columnIndex(named: column) else {
            throw PostgresError(code: .decoding, message: "no column named \"\(column)\" in the result")
        }
        return try rows.decode(type, row: index, column: position)
    }
}

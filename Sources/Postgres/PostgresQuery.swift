import Foundation

/// A SQL statement with its parameters.
///
/// Built only from a string literal: every interpolated value becomes a numbered parameter
/// (`$1`, `$2`, …) sent separately from the SQL text, so values can never change the statement.
/// Names that cannot be parameters are interpolated as `\(identifier: name)`, always quoted;
/// counts that cannot be, as `\(literal: n)`; a piece of the program's own SQL as `\(fragment: "…")`.
///
/// ```swift
/// let query: PostgresQuery = "SELECT name FROM apps WHERE id = \(appID)"
/// ```
public struct PostgresQuery: Sendable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// One parameter: its type and its binary value (`nil` is SQL NULL).
    struct Binding: Sendable {
        let type: PostgresType
        let bytes: [UInt8]?
    }

    public private(set) var sql: String
    private(set) var bindings: [Binding]

    public init(stringLiteral value: String) {
        self.sql = value
        self.bindings = []
    }

    public init(stringInterpolation: StringInterpolation) {
        self.sql = stringInterpolation.sql
        self.bindings = stringInterpolation.bindings
    }

    public var description: String { sql }

    public struct StringInterpolation: StringInterpolationProtocol {
        var sql: String
        var bindings: [Binding]

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql = ""
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            bindings = []
            bindings.reserveCapacity(interpolationCount)
        }

        public mutating func appendLiteral(_ literal: String) {
            sql += literal
        }

        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value) {
            bindings.append(Binding(type: Value.postgresType, bytes: value.postgresBytes()))
            sql += "$\(bindings.count)"
        }

        /// An optional value: `nil` is sent as SQL NULL of the wrapped type.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            bindings.append(Binding(type: Value.postgresType, bytes: value?.postgresBytes() ?? nil))
            sql += "$\(bindings.count)"
        }

        /// An integer written into the statement, for the places that cannot take a parameter,
        /// such as `FETCH n`. Only digits can come of it.
        public mutating func appendInterpolation(literal value: Int) {
            sql += String(value)
        }

        /// The columns of `columns`, comma-separated in the order of its cases, each prefixed with
        /// `table` (`e.`): a list that several statements select and one decoder reads. Only
        /// the program's literals can come of it.
        public mutating func appendInterpolation<Columns: SQLColumns>(
            columnsOf columns: Columns.Type,
            in table: StaticString = ""
        ) {
            sql += columns.allCases.map { "\(table)\($0.sql)" }.joined(separator: ", ")
        }

        /// The arguments of a function call in PostgreSQL's named notation, `name => $n, …`: each
        /// value goes to the parameter of its name, whatever their order, and a name the function
        /// does not have fails the statement.
        public mutating func appendInterpolation(arguments: PostgresArguments) {
            var first = true
            for (name, binding) in arguments.named {
                bindings.append(binding)
                sql += (first ? "" : ", ") + "\(name) => $\(bindings.count)"
                first = false
            }
        }

        /// A quoted identifier (database, role or table name), for the statements that cannot
        /// take parameters, such as `CREATE DATABASE`. Quoting makes any text a single name.
        public mutating func appendInterpolation(identifier: String) {
            sql += "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }

        /// Quoted identifiers separated by commas: the columns of a table read from the catalog.
        public mutating func appendInterpolation(identifiers: [String]) {
            for (index, identifier) in identifiers.enumerated() {
                if index > 0 { sql += ", " }
                appendInterpolation(identifier: identifier)
            }
        }

        /// Columns, each of the table the statement calls by `of` (a name of the program's),
        /// separated by commas: `r."position", z."data"`.
        public mutating func appendInterpolation(columns: [(of: StaticString, name: String)]) {
            for (index, column) in columns.enumerated() {
                if index > 0 { sql += ", " }
                sql += "\(column.of)."
                appendInterpolation(identifier: column.name)
            }
        }

        /// A piece of SQL written in the program (a literal, never data), which one statement
        /// takes in several forms.
        public mutating func appendInterpolation(fragment: StaticString) {
            sql += "\(fragment)"
        }
    }
}

/// The columns a statement selects, named once as the cases of an enum (in the order they are
/// selected) so that the statements and the code that reads their rows agree.
public protocol SQLColumns: CaseIterable {
    /// The column, or an expression over it, as the statement selects it.
    var sql: StaticString { get }
}

/// The arguments of a call to a stored function, each under the name of its parameter; see
/// `PostgresQuery.StringInterpolation.appendInterpolation(arguments:)`.
public struct PostgresArguments: Sendable {
    fileprivate private(set) var named: [(name: StaticString, binding: PostgresQuery.Binding)] = []

    public init() {}

    /// The parameters named so far, in order.
    public var names: [String] { named.map { "\($0.name)" } }

    /// Adds `value` for the parameter `name` (a literal of the program, never data).
    public mutating func append<Value: PostgresEncodable>(_ name: StaticString, _ value: Value) {
        named.append((name, PostgresQuery.Binding(type: Value.postgresType, bytes: value.postgresBytes())))
    }

    /// Adds `value` for the parameter `name`; `nil` is SQL NULL of the wrapped type.
    public mutating func append<Value: PostgresEncodable>(_ name: StaticString, _ value: Value?) {
        named.append((name, PostgresQuery.Binding(type: Value.postgresType, bytes: value?.postgresBytes() ?? nil)))
    }
}

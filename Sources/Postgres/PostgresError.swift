/// An error from the `Postgres` module.
///
/// `description` is safe to show to clients (it names the kind of failure only);
/// `debugDescription` carries everything known (server message, detail, hint, SQLSTATE, query)
/// but the data rows hold, and belongs in logs.
public struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case invalidConnectionString
            case connectionFailure
            case server
            case decoding
            case checkoutTimeout
            case poolShutDown
        }

        private let base: Base

        private init(_ base: Base) {
            self.base = base
        }

        /// The connection string (URL or conninfo) could not be parsed.
        public static let invalidConnectionString = Code(.invalidConnectionString)
        /// The server could not be reached, or the connection broke.
        public static let connectionFailure = Code(.connectionFailure)
        /// The server rejected a statement; `sqlState` says why.
        public static let server = Code(.server)
        /// A result value could not be decoded into the requested Swift type.
        public static let decoding = Code(.decoding)
        /// No connection became free within the pool's checkout timeout.
        public static let checkoutTimeout = Code(.checkoutTimeout)
        /// The pool has been shut down.
        public static let poolShutDown = Code(.poolShutDown)

        public var description: String { base.rawValue }
    }

    public let code: Code
    /// The server's SQLSTATE, when the server reported one.
    public let sqlState: SQLState?
    /// The primary message (server message or client-side explanation).
    public let message: String
    public var detail: String? = nil
    public var hint: String? = nil
    public var constraint: String? = nil
    public var table: String? = nil
    public var column: String? = nil
    /// The SQL text involved, for debugging; never shown to clients.
    public var query: String? = nil

    public init(code: Code, sqlState: SQLState? = nil, message: String) {
        self.code = code
        self.sqlState = sqlState
        self.message = message
    }

    /// A unique constraint was violated (SQLSTATE 23505).
    public var isUniqueViolation: Bool { sqlState == .uniqueViolation }

    /// A row was written to a partitioned table that has no partition for it: PostgreSQL's "no
    /// partition of relation … found for row" (23514 naming a table but no constraint, where a
    /// CHECK constraint's violation names its constraint). `table` is the partitioned table.
    public var isMissingPartition: Bool {
        sqlState == .checkViolation && constraint == nil && table != nil
    }

    /// The transaction lost a serialization race (40001) or a deadlock (40P01); retrying it may succeed.
    public var isSerializationFailure: Bool {
        sqlState == .serializationFailure || sqlState == .deadlockDetected
    }

    /// The connection is gone or the server cannot take it; another connection may succeed later.
    public var isConnectionFailure: Bool {
        code == .connectionFailure || sqlState?.isConnectionFailure == true
    }

    public var description: String {
        switch code {
        case .connectionFailure: "database unavailable"
        case .checkoutTimeout: "database busy: no connection available in time"
        case .poolShutDown: "database connection pool is shut down"
        case .invalidConnectionString: "invalid database connection string"
        case .decoding: "unexpected data from the database"
        default: "database error" + (sqlState.map { " (SQLSTATE \($0))" } ?? "")
        }
    }

    /// `detail` without the data it quotes, which logs must not hold (a person's content, tokens,
    /// device ids): PostgreSQL quotes a failing row whole ("Failing row contains (…)"), a key's
    /// values ("Key (app_id, device_id)=(…) already exists"), and the text a data exception
    /// (SQLSTATE class 22) could not read.
    static func withoutData(_ detail: String, sqlState: SQLState?) -> String {
        if sqlState?.errorClass == "22" { return "(left out: it may quote data)" }
        if detail.hasPrefix("Failing row contains") { return "Failing row contains (left out)" }
        guard detail.hasPrefix("Key ("), let equals = detail.firstRange(of: ")=("),
            let close = detail.lastIndex(of: ")"),
            close >= equals.upperBound
        else { return detail }
        return detail[..<equals.upperBound] + "left out" + detail[close...]
    }

    public var debugDescription: String {
        var parts = ["code: \(code)"]
        if let sqlState { parts.append("sqlState: \(sqlState)") }
        parts.append("message: \(message)")
        if let detail { parts.append("detail: \(Self.withoutData(detail, sqlState: sqlState))") }
        if let hint { parts.append("hint: \(hint)") }
        if let constraint { parts.append("constraint: \(constraint)") }
        if let table { parts.append("table: \(table)") }
        if let column { parts.append("column: \(column)") }
        if let query { parts.append("query: \(query)") }
        return "PostgresError(" + parts.joined(separator: ", ") + ")"
    }
}

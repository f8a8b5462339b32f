/// A PostgreSQL SQLSTATE error code (five characters), as reported by the server.
///
/// Callers compare against the named codes below to tell failures apart; the class
/// (first two characters) groups related conditions such as connection exceptions.
public struct SQLState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The two-character class of the code, e.g. `23` for integrity constraint violations.
    public var errorClass: Substring { rawValue.prefix(2) }

    public var description: String { rawValue }

    public static let uniqueViolation = SQLState(rawValue: "23505")
    public static let foreignKeyViolation = SQLState(rawValue: "23503")
    public static let checkViolation = SQLState(rawValue: "23514")
    public static let notNullViolation = SQLState(rawValue: "23502")
    public static let serializationFailure = SQLState(rawValue: "40001")
    public static let deadlockDetected = SQLState(rawValue: "40P01")
    public static let insufficientPrivilege = SQLState(rawValue: "42501")
    public static let undefinedTable = SQLState(rawValue: "42P01")
    public static let syntaxError = SQLState(rawValue: "42601")
    public static let raiseException = SQLState(rawValue: "P0001")
    public static let queryCanceled = SQLState(rawValue: "57014")
    public static let adminShutdown = SQLState(rawValue: "57P01")
    public static let crashShutdown = SQLState(rawValue: "57P02")
    public static let cannotConnectNow = SQLState(rawValue: "57P03")

    /// Whether the code says the session is gone or cannot be used (class 08, or the server
    /// shutting down / starting up).
    public var isConnectionFailure: Bool {
        errorClass == "08" || self == .adminShutdown || self == .crashShutdown || self == .cannotConnectNow
    }
}

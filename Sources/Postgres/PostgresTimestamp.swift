/// A `timestamptz` exact to the microsecond (PostgreSQL's resolution): microseconds since
/// 1970-01-01T00:00:00Z. `Date` works too, but rounds through a `Double`.
public struct PostgresTimestamp: Hashable, Sendable, Comparable, PostgresEncodable, PostgresDecodable {
    public var microsecondsSince1970: Int64

    public init(microsecondsSince1970: Int64) {
        self.microsecondsSince1970 = microsecondsSince1970
    }

    /// Microseconds from 1970-01-01 to 2000-01-01, PostgreSQL's epoch.
    private static let epochOffset: Int64 = 946_684_800_000_000

    public static func < (lhs: PostgresTimestamp, rhs: PostgresTimestamp) -> Bool {
        lhs.microsecondsSince1970 < rhs.microsecondsSince1970
    }

    public static var postgresType: PostgresType { .timestamptz }

    public func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool {
        buffer.appendBigEndian(microsecondsSince1970 - Self.epochOffset)
    }

    public init(postgresValue value: PostgresValue) throws {
        guard value.type == .timestamptz || value.type == .timestamp, let micros = value.integer(Int64.self) else {
            throw value.decodingError(Self.self)
        }
        guard micros != .max, micros != .min else {
            throw value.decodingError(Self.self, reason: "infinite timestamps have no exact value")
        }
        microsecondsSince1970 = micros + Self.epochOffset
    }
}

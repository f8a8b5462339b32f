/// An instant, exact to the microsecond (PostgreSQL's resolution), as microseconds since
/// 1970-01-01T00:00:00Z. Time is always passed in; the lifecycle never reads a clock.
public struct Timestamp: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var microsecondsSince1970: Int64

    public init(microsecondsSince1970: Int64) {
        self.microsecondsSince1970 = microsecondsSince1970
    }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.microsecondsSince1970 < rhs.microsecondsSince1970
    }

    public static func + (lhs: Timestamp, rhs: Duration) -> Timestamp {
        Timestamp(microsecondsSince1970: lhs.microsecondsSince1970 &+ rhs.microseconds)
    }

    public static func - (lhs: Timestamp, rhs: Duration) -> Timestamp {
        Timestamp(microsecondsSince1970: lhs.microsecondsSince1970 &- rhs.microseconds)
    }

    /// The time from `rhs` to `lhs`.
    public static func - (lhs: Timestamp, rhs: Timestamp) -> Duration {
        .microseconds(lhs.microsecondsSince1970 - rhs.microsecondsSince1970)
    }

    public var description: String { RFC3339.format(self) }
}

extension Duration {
    /// The duration in whole microseconds (rounded toward zero).
    public var microseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000 + attoseconds / 1_000_000_000_000
    }
}

extension Timestamp: Codable {
    /// Timestamps are RFC 3339 strings in JSON (`2026-11-21T05:42:00.123456Z`).
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let timestamp = RFC3339.parse(text) else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "expected an RFC 3339 date-time such as 2026-11-21T05:42:00Z, got \"\(text)\""
                )
            )
        }
        self = timestamp
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(RFC3339.format(self))
    }
}

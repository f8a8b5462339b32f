import struct Foundation.Date

/// PostgreSQL's binary timestamps: microseconds since 2000-01-01 00:00:00 UTC.
enum PostgresTime {
    /// Seconds from 2000-01-01 (PostgreSQL's epoch) to 2001-01-01 (Foundation's reference date).
    private static let epochOffset: Double = 366 * 86_400

    static func microseconds(from date: Date) -> Int64 {
        Int64(((date.timeIntervalSinceReferenceDate + epochOffset) * 1_000_000).rounded())
    }

    static func date(fromMicroseconds microseconds: Int64) -> Date {
        switch microseconds {
        case .max: .distantFuture
        case .min: .distantPast
        default: Date(timeIntervalSinceReferenceDate: Double(microseconds) / 1_000_000 - epochOffset)
        }
    }
}

public import CanonicalJSON
import Foundation

extension Timestamp {
    /// The system clock, to the microsecond.
    @Sendable
    public static func now() -> Timestamp {
        Timestamp(microsecondsSince1970: Int64((Date().timeIntervalSince1970 * 1_000_000).rounded()))
    }
}

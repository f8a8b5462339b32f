public import Crypto
import Foundation

/// The keys a database made to seal its archives' values (`archive_keys`), by id: an erased key
/// is known, without its bytes, and so are the activities an erasure reached.
public struct ArchiveKeyRing: Sendable {
    public enum Lookup: Equatable, Sendable {
        case key(SymmetricKey)
        /// Destroyed by an erasure: what it sealed is gone.
        case erased
        /// Not a key this database made.
        case unknown
    }

    private var keys: [Int64: SymmetricKey?]
    private var erased: Set<[String]>

    /// `keys` by id, with `nil` bytes for an erased key; `erasedActivities` as `[app, activity]`.
    public init(_ keys: [Int64: [UInt8]?] = [:], erasedActivities: Set<[String]> = []) {
        self.keys = keys.mapValues { bytes in bytes.map { SymmetricKey(data: $0) } }
        self.erased = erasedActivities
    }

    /// Whether an erasure reached the activity (its key, or its rows before they were archived).
    public func wasErased(app: String, activity: String) -> Bool {
        erased.contains([app, activity])
    }

    public func lookup(_ id: Int64) -> Lookup {
        switch keys[id] {
        case nil: .unknown
        case .some(nil): .erased
        case .some(let key?): .key(key)
        }
    }

    public var count: Int { keys.count }
}

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

/// A value an archive holds sealed: `v1.<key id>.<base64 of AES-256-GCM's nonce, ciphertext
/// and tag>`, authenticated with the row it belongs to (its context, `<table>/<row's key>`), so
/// that a value moved to another row does not open.
public enum SealedValue {
    /// A sealed value that does not open: damaged, moved, or sealed under a key this database
    /// never made.
    public struct Unopenable: Error, CustomStringConvertible {
        public let description: String
    }

    private static let version = "v1"

    public static func seal(_ plain: String, keyID: Int64, key: SymmetricKey, context: String) throws -> String {
        let box = try AES.GCM.seal(Data(plain.utf8), using: key, authenticating: Data(context.utf8))
        guard let combined = box.combined else { throw Unopenable(description: "a sealed value has no nonce") }
        return "\(version).\(keyID).\(combined.base64EncodedString())"
    }

    /// The plain value, or `nil` when its key was erased.
    public static func open(_ sealed: String, context: String, keys: ArchiveKeyRing) throws -> String? {
        let parts = sealed.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == version, let keyID = Int64(parts[1]),
            let combined = Data(base64Encoded: String(parts[2]))
        else { throw Unopenable(description: "\(context): a sealed value is not in the form v1.<key>.<data>") }
        switch keys.lookup(keyID) {
        case .erased:
            return nil
        case .unknown:
            throw Unopenable(description: "\(context) is sealed under key \(keyID), which this database never made")
        case .key(let key):
            do {
                let box = try AES.GCM.SealedBox(combined: combined)
                let plain = try AES.GCM.open(box, using: key, authenticating: Data(context.utf8))
                return String(decoding: plain, as: UTF8.self)
            } catch {
                throw Unopenable(description: "\(context): its sealed value does not open under key \(keyID)")
            }
        }
    }
}

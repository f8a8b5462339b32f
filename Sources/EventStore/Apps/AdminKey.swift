import Crypto

/// The admin key, held as its SHA-256 digest and compared with a presented key without an
/// early exit.
public struct AdminKey: Sendable {
    public let digest: [UInt8]

    public init(_ key: String) {
        digest = Self.digest(of: key)
    }

    /// Whether `key` is the admin key.
    public func matches(_ key: String) -> Bool {
        zip(Self.digest(of: key), digest).reduce(0) { $0 | ($1.0 ^ $1.1) } == 0
    }

    private static func digest(of key: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(key.utf8)))
    }
}

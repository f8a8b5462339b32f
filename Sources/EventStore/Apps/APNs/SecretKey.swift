import Crypto
import Foundation

/// The server's secret (`LIVELINE_SECRET_KEY`), under which what must not be stored in the clear
/// (APNs private keys) is sealed with AES-256-GCM before it reaches the database.
public struct SecretKey: Sendable {
    private let key: SymmetricKey

    /// How to make one, for messages.
    public static let howToMake = "32 random bytes in base64, such as `openssl rand -base64 32` prints"

    /// Reads the secret: 32 bytes in base64 (standard or URL-safe alphabet) or 64 hex digits.
    /// - Throws: `InvalidSecretKey` for anything else.
    public init(_ text: String) throws(InvalidSecretKey) {
        guard let bytes = Self.hexBytes(text) ?? Self.base64Bytes(text), bytes.count == 32 else {
            throw InvalidSecretKey()
        }
        key = SymmetricKey(data: bytes)
    }

    /// A new random secret, as `init` reads it.
    public static func random() -> String {
        SymmetricKey(size: .bits256).withUnsafeBytes { Data($0).base64EncodedString() }
    }

    /// `plaintext` sealed (nonce, ciphertext and tag together), bound to `context`: it opens
    /// only with the same context.
    func seal(_ plaintext: [UInt8], context: String) throws -> [UInt8] {
        let box = try AES.GCM.seal(plaintext, using: key, authenticating: Array(context.utf8))
        // A box sealed with a generated nonce always has its combined form.
        return Array(box.combined!)
    }

    /// What `seal` sealed with this key and `context`.
    /// - Throws: when the key or the context differ, or the bytes were altered.
    func open(_ sealed: [UInt8], context: String) throws -> [UInt8] {
        let box = try AES.GCM.SealedBox(combined: sealed)
        return Array(try AES.GCM.open(box, using: key, authenticating: Array(context.utf8)))
    }

    private static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == 64 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        return bytes
    }

    private static func base64Bytes(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map(Array.init)
    }
}

/// `LIVELINE_SECRET_KEY` is not a 32-byte secret.
public struct InvalidSecretKey: Error, CustomStringConvertible {
    public init() {}

    public var description: String { "LIVELINE_SECRET_KEY must be \(SecretKey.howToMake) (or 64 hex digits)" }
}

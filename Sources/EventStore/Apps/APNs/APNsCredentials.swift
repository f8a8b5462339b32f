public import ActivityLifecycle
public import CanonicalJSON
public import Crypto
import Foundation

/// Which APNs an app's pushes go to.
public enum APNsEnvironment: String, Hashable, Sendable, CaseIterable {
    case sandbox
    case production
}

/// An app's APNs token credentials (Live Activities take no certificates): Apple's team id, the
/// id of the `.p8` key, the environment, and the P-256 private key that signs provider tokens.
///
/// The key is never printed: `description`, `debugDescription` and reflection show everything
/// but the key.
public struct APNsCredentials: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public let teamID: String
    public let keyID: String
    public let environment: APNsEnvironment
    public let privateKey: P256.Signing.PrivateKey
    /// SHA-256 of the public key (its X9.63 form): names the key without revealing it.
    public let publicKeySHA256: [UInt8]

    /// Checks the credentials as an operator gives them.
    /// - Parameter privateKeyPEM: the `.p8` file from Apple's developer site: a P-256 private key
    ///   in PEM.
    /// - Throws: `InvalidAPNsCredentials` naming the field (as the API names it) and the rule.
    public init(
        teamID: String,
        keyID: String,
        environment: APNsEnvironment,
        privateKeyPEM: String
    ) throws(InvalidAPNsCredentials) {
        guard Self.isAppleID(teamID) else {
            throw InvalidAPNsCredentials(
                field: "teamId",
                reason: "must be the 10-character team id from Apple (A-Z, 0-9)"
            )
        }
        guard Self.isAppleID(keyID) else {
            throw InvalidAPNsCredentials(field: "keyId", reason: "must be the 10-character id of the key (A-Z, 0-9)")
        }
        guard Self.isPEMPrivateKey(privateKeyPEM) else {
            throw InvalidAPNsCredentials(
                field: "privateKey",
                reason: "must be a PEM-encoded P-256 private key, as in the .p8 file Apple issues"
            )
        }
        let privateKey: P256.Signing.PrivateKey
        do {
            privateKey = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        } catch {
            throw InvalidAPNsCredentials(
                field: "privateKey",
                reason: "is PEM but not a P-256 private key; give the .p8 file Apple issues, whole",
                isWellFormed: true
            )
        }
        self.init(teamID: teamID, keyID: keyID, environment: environment, privateKey: privateKey)
    }

    init(teamID: String, keyID: String, environment: APNsEnvironment, privateKey: P256.Signing.PrivateKey) {
        self.teamID = teamID
        self.keyID = keyID
        self.environment = environment
        self.privateKey = privateKey
        publicKeySHA256 = Array(SHA256.hash(data: privateKey.publicKey.x963Representation))
    }

    public var description: String {
        "APNs credentials (team \(teamID), key \(keyID), \(environment.rawValue), public key SHA-256 "
            + "\(publicKeySHA256.hexadecimal))"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(self, children: ["teamID": teamID, "keyID": keyID, "environment": environment])
    }

    /// Whether `text` has the form of a PEM private key, as the API document's pattern says:
    /// `-----BEGIN PRIVATE KEY-----` (or `EC PRIVATE KEY`), base64 and line breaks, the `END`
    /// line, with spaces, tabs and line breaks around it. Whether it holds a P-256 key is the
    /// next question.
    static func isPEMPrivateKey(_ text: String) -> Bool {
        let isBlank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        var bytes = ArraySlice(text.utf8)
        while let first = bytes.first, isBlank(first) { bytes.removeFirst() }
        while let last = bytes.last, isBlank(last) { bytes.removeLast() }
        let labels = ["PRIVATE KEY", "EC PRIVATE KEY"]
        guard let begin = labels.map({ Array("-----BEGIN \($0)-----".utf8) }).first(where: bytes.starts(with:)),
            let end = labels.map({ Array("-----END \($0)-----".utf8) }).first(where: {
                bytes.suffix($0.count).elementsEqual($0)
            }),
            bytes.count > begin.count + end.count
        else { return false }
        return bytes.dropFirst(begin.count).dropLast(end.count).allSatisfy { byte in
            isBlank(byte) || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "=")
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
    }

    private static func isAppleID(_ text: String) -> Bool {
        text.utf8.count == 10
            && text.utf8.allSatisfy {
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
            }
    }
}

/// Credentials as they may be shown: all but the private key.
public struct APNsCredentialSummary: Hashable, Sendable {
    public let app: AppID
    public let teamID: String
    public let keyID: String
    public let environment: APNsEnvironment
    /// SHA-256 of the public key, in hex.
    public let publicKeySHA256: String
    public let updatedAt: Timestamp
}

/// Credentials that break a rule; `field` names the field as the API does (`privateKey`).
public struct InvalidAPNsCredentials: Error, Hashable, Sendable, CustomStringConvertible {
    public let field: String
    public let reason: String
    /// The field has the form it takes (a PEM private key) but not a value that works (not a
    /// P-256 key): a request the API document admits, refused on its meaning.
    public let isWellFormed: Bool

    init(field: String, reason: String, isWellFormed: Bool = false) {
        self.field = field
        self.reason = reason
        self.isWellFormed = isWellFormed
    }

    public var description: String { "\(field) \(reason)" }
}

extension [UInt8] {
    /// The bytes in lowercase hex.
    var hexadecimal: String {
        map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }
        .joined()
    }
}

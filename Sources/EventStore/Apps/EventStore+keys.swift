public import ActivityLifecycle
import Crypto
public import Foundation
import Postgres

/// An API key as issued: the secret is shown once and only its SHA-256 is stored.
public struct IssuedAPIKey: Hashable, Sendable {
    /// Names the key for revocation; not a secret.
    public let keyID: UUID
    public let app: AppID
    /// What the app sends as `Authorization: Bearer <secret>`.
    public let secret: String
}

/// The app that holds a key, and which key it is.
public struct KeyHolder: Hashable, Sendable {
    public let keyID: UUID
    public let app: AppID
}

extension EventStore {
    /// Issues a new key for `app`; its other keys stay valid (rotation without downtime).
    /// - Throws: `EventStoreError.unknownApp`.
    public func issueKey(for app: AppID, by actor: AdminActor) async throws -> IssuedAPIKey {
        let key = IssuedAPIKey(keyID: UUID(), app: app, secret: Self.newSecret())
        try await administering(actor) { connection in
            do {
                try KeyQueries.insertKey(key.keyID, of: app, secretDigest: Self.digest(of: key.secret), connection)
            } catch let error as PostgresError where error.sqlState == .foreignKeyViolation {
                throw EventStoreError.unknownApp(app)
            }
        }
        return key
    }

    /// Revokes a key of `app`; `false` when the app has no such key. Revoking twice is fine.
    public func revokeKey(_ keyID: UUID, of app: AppID, by actor: AdminActor) async throws -> Bool {
        try await administering(actor) { try KeyQueries.revokeKey(keyID, of: app, $0) }
    }

    /// The holder of an unrevoked key with this secret, or `nil`.
    public func keyHolder(secret: String) async throws -> KeyHolder? {
        let digest = Self.digest(of: secret)
        return try await withConnection { try KeyQueries.keyHolder(secretDigest: digest, $0) }
    }

    /// `ll_` and 32 random bytes, base64url: 256 bits, safe in headers and shells.
    private static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let base64 = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return "ll_" + base64
    }

    static func digest(of secret: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(secret.utf8)))
    }
}

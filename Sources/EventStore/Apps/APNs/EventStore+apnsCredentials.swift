public import ActivityLifecycle
import Crypto
import Postgres

extension EventStore {
    /// Sets or replaces the app's APNs credentials; the private key is sealed under `secret`
    /// (bound to the app) before it is stored. Audited as `apns.set`, without the key.
    /// - Throws: `EventStoreError.unknownApp`.
    public func setAPNsCredentials(
        _ credentials: APNsCredentials,
        for app: AppID,
        sealedWith secret: SecretKey,
        by actor: AdminActor
    ) async throws -> APNsCredentialSummary {
        let sealed = try secret.seal(Array(credentials.privateKey.rawRepresentation), context: Self.sealingContext(app))
        let summary = try await administering(actor) { connection in
            try APNsCredentialQueries.upsert(
                app,
                teamID: credentials.teamID,
                keyID: credentials.keyID,
                environment: credentials.environment,
                sealedPrivateKey: sealed,
                publicKeySHA256: credentials.publicKeySHA256,
                connection
            )
        }
        guard let summary else { throw EventStoreError.unknownApp(app) }
        return summary
    }

    /// Removes the app's APNs credentials; `false` when it had none. Audited as `apns.removed`.
    public func removeAPNsCredentials(of app: AppID, by actor: AdminActor) async throws -> Bool {
        try await administering(actor) { try APNsCredentialQueries.delete(app, $0) }
    }

    /// The app's credentials as they may be shown (never the key), or `nil` when it has none.
    public func apnsCredentialSummary(of app: AppID) async throws -> APNsCredentialSummary? {
        try await withConnection { try APNsCredentialQueries.summary(of: app, $0) }
    }

    /// The app's credentials with their private key, opened with `secret`; `nil` when it has none.
    /// - Throws: `EventStoreError.sealedUnderAnotherSecret` when `secret` is not the one they
    ///   were sealed under (or the sealed key was altered).
    public func apnsCredentials(of app: AppID, openedWith secret: SecretKey) async throws -> APNsCredentials? {
        guard let (summary, sealed) = try await withConnection({ try APNsCredentialQueries.sealed(of: app, $0) })
        else { return nil }
        let privateKey: P256.Signing.PrivateKey
        do {
            privateKey = try P256.Signing.PrivateKey(
                rawRepresentation: try secret.open(sealed, context: Self.sealingContext(app))
            )
        } catch {
            throw EventStoreError.sealedUnderAnotherSecret(app)
        }
        return APNsCredentials(
            teamID: summary.teamID,
            keyID: summary.keyID,
            environment: summary.environment,
            privateKey: privateKey
        )
    }

    /// What a sealed key is bound to: a key sealed for one app does not open as another's.
    private static func sealingContext(_ app: AppID) -> String {
        "liveline apns_credentials \(app.rawValue)"
    }
}

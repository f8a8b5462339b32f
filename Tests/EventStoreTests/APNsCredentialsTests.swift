import ActivityLifecycle
import CanonicalJSON
import Crypto
import Foundation
import Postgres
import TestSupport
import Testing

@testable import EventStore

@Suite("APNs credentials: checked, sealed at rest under the server's secret, never shown")
struct APNsCredentialsTests {
    static let secret = try! SecretKey(SecretKey.random())
    static let key = P256.Signing.PrivateKey()

    static func credentials(
        key: P256.Signing.PrivateKey = key,
        environment: APNsEnvironment = .sandbox
    ) throws -> APNsCredentials {
        try APNsCredentials(
            teamID: "TEAM123456",
            keyID: "KEY1234567",
            environment: environment,
            privateKeyPEM: key.pemRepresentation
        )
    }

    @Test(
        "each field is held to its rule, named as the API names it",
        arguments: [
            ("team12345", "KEY1234567", key.pemRepresentation, "teamId"),
            ("TEAM1234567", "KEY1234567", key.pemRepresentation, "teamId"),
            ("TEAM123456", "key1234567", key.pemRepresentation, "keyId"),
            ("TEAM123456", "KEY1234567", "not a key", "privateKey"),
            ("TEAM123456", "KEY1234567", P384.Signing.PrivateKey().pemRepresentation, "privateKey"),
            ("TEAM123456", "KEY1234567", String(key.pemRepresentation.dropLast(30)), "privateKey"),
        ]
    )
    func rules(teamID: String, keyID: String, pem: String, field: String) {
        #expect(throws: InvalidAPNsCredentials.self) {
            _ = try APNsCredentials(teamID: teamID, keyID: keyID, environment: .production, privateKeyPEM: pem)
        }
        do {
            _ = try APNsCredentials(teamID: teamID, keyID: keyID, environment: .production, privateKeyPEM: pem)
        } catch {
            #expect(error.field == field)
        }
    }

    @Test("printing credentials, plainly, for debugging or by reflection, never shows the key")
    func neverPrinted() throws {
        let credentials = try Self.credentials()
        let raw = Self.key.rawRepresentation.base64EncodedString()
        let pemBody = Self.key.pemRepresentation.split(separator: "\n").dropFirst().first.map(String.init) ?? ""
        for text in [
            "\(credentials)", String(reflecting: credentials),
            String(describing: Mirror(reflecting: credentials).children.map(\.value)),
            "\(Mirror(reflecting: credentials).children.map(\.label))",
        ] {
            #expect(!text.contains(raw))
            #expect(!text.contains(pemBody))
        }
        #expect("\(credentials)".contains("TEAM123456"))
    }

    @Test("the server's secret is 32 bytes, in base64 (either alphabet) or hex")
    func secretKeys() throws {
        let bytes = [UInt8](repeating: 0xFB, count: 32)
        let base64 = Data(bytes).base64EncodedString()
        _ = try SecretKey(base64)
        _ = try SecretKey(base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_"))
        _ = try SecretKey(String(repeating: "fb", count: 32))
        _ = try SecretKey(SecretKey.random())
        for wrong in ["", "short", Data(bytes.dropLast()).base64EncodedString(), String(repeating: "zz", count: 32)] {
            #expect(throws: InvalidSecretKey.self) { _ = try SecretKey(wrong) }
        }
    }

    @Test("credentials are stored sealed, open only with the secret and for the app they were set for")
    func sealedAtRest() async throws {
        let fixture = try await StoreFixture.make()
        let other = AppID(rawValue: "com.example.other")!
        try await fixture.withStore { store in
            try await store.createApp(other, AppSettings(bundleID: "com.example.other"), by: .commandLine)
            let summary = try await store.setAPNsCredentials(
                try Self.credentials(),
                for: fixture.app,
                sealedWith: Self.secret,
                by: .adminAPI
            )
            #expect(summary.teamID == "TEAM123456")
            #expect(summary.keyID == "KEY1234567")
            #expect(summary.environment == .sandbox)
            #expect(summary.publicKeySHA256 == SHA256.hash(data: Self.key.publicKey.x963Representation).hex)
            #expect(try await store.apnsCredentialSummary(of: fixture.app) == summary)

            let opened = try #require(try await store.apnsCredentials(of: fixture.app, openedWith: Self.secret))
            #expect(opened.privateKey.rawRepresentation == Self.key.rawRepresentation)
            #expect(opened.teamID == "TEAM123456" && opened.environment == .sandbox)

            // What the database holds is neither the key nor its PEM.
            let sealed: [UInt8] = try await store.pool.withConnection {
                try $0.query("SELECT sealed_private_key FROM apns_credentials").single!.decode(0)
            }
            #expect(sealed.count > 32)
            #expect(!Self.contains(sealed, Array(Self.key.rawRepresentation)))
            #expect(!Self.contains(sealed, Array(Self.key.pemRepresentation.utf8)))

            await #expect(throws: EventStoreError.sealedUnderAnotherSecret(fixture.app)) {
                _ = try await store.apnsCredentials(of: fixture.app, openedWith: SecretKey(SecretKey.random()))
            }
            // A sealed key copied to another app's row does not open there.
            try await store.pool.withConnection { connection in
                try connection.execute(
                    """
                    INSERT INTO apns_credentials (app_id, team_id, key_id, environment, sealed_private_key, public_key_sha256)
                    SELECT \(other.rawValue), team_id, key_id, environment, sealed_private_key, public_key_sha256
                    FROM apns_credentials WHERE app_id = \(fixture.app.rawValue)
                    """
                )
            }
            await #expect(throws: EventStoreError.sealedUnderAnotherSecret(other)) {
                _ = try await store.apnsCredentials(of: other, openedWith: Self.secret)
            }
        }
    }

    @Test("replacing and removing are audited without the key; an unknown app is refused")
    func auditedChanges() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            _ = try await store.setAPNsCredentials(
                try Self.credentials(),
                for: fixture.app,
                sealedWith: Self.secret,
                by: .adminAPI
            )
            let replacement = P256.Signing.PrivateKey()
            let replaced = try await store.setAPNsCredentials(
                try Self.credentials(key: replacement, environment: .production),
                for: fixture.app,
                sealedWith: Self.secret,
                by: .commandLine
            )
            #expect(replaced.environment == .production)
            let opened = try await store.apnsCredentials(of: fixture.app, openedWith: Self.secret)
            #expect(opened?.privateKey.rawRepresentation == replacement.rawRepresentation)

            #expect(try await store.removeAPNsCredentials(of: fixture.app, by: .adminAPI))
            #expect(try await !store.removeAPNsCredentials(of: fixture.app, by: .adminAPI))
            #expect(try await store.apnsCredentialSummary(of: fixture.app) == nil)
            #expect(try await store.apnsCredentials(of: fixture.app, openedWith: Self.secret) == nil)

            let changes = try await store.adminChanges(of: fixture.app, limit: 10).filter {
                $0.action.hasPrefix("apns.")
            }
            #expect(changes.map(\.action) == ["apns.removed", "apns.set", "apns.set"])
            #expect(changes.map(\.actor) == ["admin_api", "command_line", "admin_api"])
            #expect(
                changes[1].details
                    == JSONObject([
                        "teamId": .string("TEAM123456"), "keyId": .string("KEY1234567"),
                        "environment": .string("production"), "publicKeySha256": .string(replaced.publicKeySHA256),
                    ])
            )

            let stranger = AppID(rawValue: "nobody")!
            await #expect(throws: EventStoreError.unknownApp(stranger)) {
                _ = try await store.setAPNsCredentials(
                    try Self.credentials(),
                    for: stranger,
                    sealedWith: Self.secret,
                    by: .adminAPI
                )
            }
        }
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard needle.count <= haystack.count else { return false }
        return (0...haystack.count - needle.count).contains { haystack[$0..<$0 + needle.count].elementsEqual(needle) }
    }
}

extension SHA256.Digest {
    var hex: String { map { String(format: "%02x", $0) }.joined() }
}

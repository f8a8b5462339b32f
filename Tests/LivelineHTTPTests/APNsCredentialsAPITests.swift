import ActivityLifecycle
import CanonicalJSON
import Crypto
import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import LivelineHTTP
import NIOCore
import Testing

@Suite("The admin API for APNs credentials: set, read, remove — the private key never returned")
struct APNsCredentialsAPITests {
    static let key = P256.Signing.PrivateKey()

    static func input(
        teamId: String = "TEAM123456",
        privateKey: String = key.pemRepresentation
    ) -> Components.Schemas.APNsCredentialsInput {
        .init(teamId: teamId, keyId: "KEY1234567", environment: .sandbox, privateKey: privateKey)
    }

    @Test("PUT stores them and answers without the key; GET shows them; DELETE removes them; all audited")
    func lifecycle() async throws {
        try await APIFixture.run(secretKey: try SecretKey(SecretKey.random())) { api in
            let app = try await api.makeApp()
            let path = Operations.SetAPNsCredentials.Input.Path(appId: app.id.rawValue)
            let set = try await api.admin.setAPNsCredentials(path: path, body: .json(Self.input())).ok.body.json
            #expect(set.appId == app.id)
            #expect(set.teamId == "TEAM123456" && set.keyId == "KEY1234567" && set.environment == .sandbox)
            #expect(set.publicKeySha256.count == 64)

            let read = try await api.admin.getAPNsCredentials(path: .init(appId: app.id.rawValue)).ok.body.json
            #expect(read == set)
            // No route answers with the key: not the answers to PUT and GET, nor the app's listing.
            let pemBody = String(Self.key.pemRepresentation.split(separator: "\n")[1])
            for uri in ["/v1/admin/apps/\(app.id)/apns", "/v1/admin/apps"] {
                let response = try await api.send(.get, uri, key: APIFixture.adminKey)
                #expect(!String(buffer: response.body).contains(pemBody))
            }
            let stored = try await api.store.apnsCredentials(of: app.id, openedWith: try #require(api.secretKey))
            #expect(stored?.privateKey.rawRepresentation == Self.key.rawRepresentation)

            _ = try await api.admin.removeAPNsCredentials(path: .init(appId: app.id.rawValue)).noContent
            _ = try await api.admin.removeAPNsCredentials(path: .init(appId: app.id.rawValue)).noContent
            let gone = try await api.send(.get, "/v1/admin/apps/\(app.id)/apns", key: APIFixture.adminKey)
            #expect(gone.status == .notFound)
            #expect(try problem(gone).code == "apns_credentials_not_found")

            let audit = try await api.store.adminChanges(of: app.id, limit: 10).map(\.action)
            #expect(audit.prefix(2) == ["apns.removed", "apns.set"])
        }
    }

    @Test("text that is not PEM, or a bad team id, is 400; a PEM key that is not P-256 is 422; nothing is stored")
    func badCredentials() async throws {
        try await APIFixture.run(secretKey: try SecretKey(SecretKey.random())) { api in
            let app = try await api.makeApp()
            let cases: [(Components.Schemas.APNsCredentialsInput, String, HTTPResponse.Status, String)] = [
                (
                    Self.input(privateKey: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"),
                    "/privateKey", .unprocessableContent, "invalid_apns_key"
                ),
                (
                    Self.input(privateKey: P384.Signing.PrivateKey().pemRepresentation),
                    "/privateKey", .unprocessableContent, "invalid_apns_key"
                ),
                (
                    Self.input(privateKey: Curve25519.Signing.PrivateKey().rawRepresentation.base64EncodedString()),
                    "/privateKey", .badRequest, "invalid_request"
                ),
                (
                    Self.input(privateKey: "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----"),
                    "/privateKey", .badRequest, "invalid_request"
                ),
                (Self.input(teamId: "team"), "/teamId", .badRequest, "invalid_request"),
            ]
            for (input, field, status, code) in cases {
                let body = Array(try JSONEncoder().encode(input))
                let response = try await api.send(
                    .put,
                    "/v1/admin/apps/\(app.id)/apns",
                    key: APIFixture.adminKey,
                    body: body
                )
                #expect(response.status == status, "\(field)")
                let refusal = try problem(response)
                #expect(refusal.code == code)
                #expect(refusal.detail(field: field))
            }
            #expect(try await api.store.apnsCredentialSummary(of: app.id) == nil)
        }
    }

    @Test("without LIVELINE_SECRET_KEY the server stores no key (503); an unknown app is 404")
    func refusals() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let body = Array(try JSONEncoder().encode(Self.input()))
            let unsealed = try await api.send(
                .put,
                "/v1/admin/apps/\(app.id)/apns",
                key: APIFixture.adminKey,
                body: body
            )
            #expect(unsealed.status == .serviceUnavailable)
            #expect(try problem(unsealed).code == "secret_key_not_configured")
            #expect(try await api.store.apnsCredentialSummary(of: app.id) == nil)
        }
        try await APIFixture.run(secretKey: try SecretKey(SecretKey.random())) { api in
            let body = Array(try JSONEncoder().encode(Self.input()))
            for method in [HTTPRequest.Method.put, .get, .delete] {
                let response = try await api.send(
                    method,
                    "/v1/admin/apps/nobody/apns",
                    key: APIFixture.adminKey,
                    body: method == .put ? body : nil
                )
                #expect(response.status == .notFound, "\(method)")
                #expect(try problem(response).code == "app_not_found", "\(method)")
            }
        }
    }
}

extension Components.Schemas.Problem {
    /// Whether the problem names `field` (a JSON pointer) as the one at fault.
    fileprivate func detail(field: String) -> Bool {
        detail("field") == .string(field)
    }
}

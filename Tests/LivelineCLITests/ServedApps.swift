import ActivityLifecycle
import Crypto
import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import LocalAPNs
import NIOCore
import TestSupport

/// What a `liveline serve` under test delivers with: a local APNs, a new database, and apps
/// (bundle `com.example.<app>`) whose sandbox credentials that APNs knows, each with a key.
struct ServedApps {
    let apns: LocalAPNs
    let database: String
    let secret: String
    /// The local APNs's certificate, for `LIVELINE_APNS_CA_FILE`.
    let certificate: URL
    let keys: [AppID: String]

    static func make(_ apps: [AppID]) async throws -> ServedApps {
        let apns = try await LocalAPNs.start()
        let folder = FileManager.default.temporaryDirectory.appending(path: "served-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let certificate = folder.appending(path: "apns.pem")
        try Data(apns.certificatePEM.utf8).write(to: certificate)
        let database = try await TestDatabase.makeMigrated()
        let secret = SecretKey.random()
        let keys = try await TestDatabase.withPool(database, maximumConnections: 2) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            var keys: [AppID: String] = [:]
            for app in apps {
                let bundleID = "com.example.\(app)"
                try await store.createApp(app, AppSettings(bundleID: bundleID), by: .commandLine)
                let signing = P256.Signing.PrivateKey()
                let keyID = "KEY" + String(format: "%07d", keys.count + 1)
                apns.register(teamID: "TEAM000001", keyID: keyID, publicKey: signing.publicKey, bundleID: bundleID)
                let credentials = try APNsCredentials(
                    teamID: "TEAM000001",
                    keyID: keyID,
                    environment: .sandbox,
                    privateKeyPEM: signing.pemRepresentation
                )
                _ = try await store.setAPNsCredentials(
                    credentials,
                    for: app,
                    sealedWith: SecretKey(secret),
                    by: .commandLine
                )
                keys[app] = try await store.issueKey(for: app, by: .commandLine).secret
            }
            return keys
        }
        return ServedApps(apns: apns, database: database, secret: secret, certificate: certificate, keys: keys)
    }

    private init(apns: LocalAPNs, database: String, secret: String, certificate: URL, keys: [AppID: String]) {
        self.apns = apns
        self.database = database
        self.secret = secret
        self.certificate = certificate
        self.keys = keys
    }

    /// The server's environment for delivering to the local APNs.
    var environment: [String: String?] {
        [
            "LIVELINE_SECRET_KEY": secret, "LIVELINE_APNS_SANDBOX_URL": apns.baseURL,
            "LIVELINE_APNS_CA_FILE": certificate.path,
        ]
    }

    /// Sends a JSON request with `key` to the server on `port`; its status and body.
    static func call(
        port: Int,
        _ method: HTTPRequest.Method,
        _ path: String,
        _ body: String?,
        key: String,
        headers: HTTPFields = [:]
    ) async throws -> (status: HTTPResponse.Status, body: String) {
        try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
            var headers = headers
            headers[.authorization] = "Bearer \(key)"
            if body != nil { headers[.contentType] = "application/json" }
            let response = try await client.execute(
                .init(path, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) })
            )
            return (response.status, response.body.map { String(buffer: $0) } ?? "")
        }
    }

    /// Signs in to the console of the server on `port` with `key`: the session's cookie.
    static func signInToConsole(port: Int, key: String) async throws -> String? {
        try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
            let form = "key=" + (key.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? key)
            let response = try await client.execute(
                .init(
                    "/console/sign-in",
                    method: .post,
                    headers: [.contentType: "application/x-www-form-urlencoded"],
                    body: ByteBuffer(string: form)
                )
            )
            return response.headers[.setCookie].map { String($0.prefix { $0 != ";" }) }
        }
    }

    /// A console page of the server on `port`, for the session with `cookie`.
    static func consolePage(port: Int, _ path: String, cookie: String) async throws -> String {
        try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
            try await client.execute(.init(path, method: .get, headers: [.cookie: cookie])).body.map {
                String(buffer: $0)
            } ?? ""
        }
    }
}

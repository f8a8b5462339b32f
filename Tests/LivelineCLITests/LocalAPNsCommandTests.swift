import ActivityLifecycle
import CanonicalJSON
import Crypto
import EventStore
import Foundation
import NIOCore
import Postgres
import TestSupport
import Testing

@Suite("liveline local-apns: a local APNs in a process of its own")
struct LocalAPNsCommandTests {
    @Test("serve delivers to it through LIVELINE_APNS_SANDBOX_URL and LIVELINE_APNS_CA_FILE; it prints each push")
    func serveDeliversToIt() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "local-apns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let key = P256.Signing.PrivateKey()
        let keyFile = folder.appending(path: "AuthKey.p8")
        let certificate = folder.appending(path: "apns.pem")
        try Data(key.pemRepresentation.utf8).write(to: keyFile)
        let apns = try LivelineProcess.start(
            ["local-apns", "--port", "0", "--team-id", "TEAM000001", "--key-id", "KEY0000001"]
                + [
                    "--key-file", keyFile.path, "--bundle-id", "com.example.game", "--certificate-file",
                    certificate.path,
                ],
            database: nil
        )
        defer { apns.terminate() }
        try await Self.waitFor("the local APNs listens", in: apns) { $0.contains("local APNs listening at") }
        let address = try #require(
            apns.outputSoFar.split(separator: "\n").first { $0.hasPrefix("local APNs listening at ") }?
                .dropFirst("local APNs listening at ".count)
        )

        // The app, its credentials (the same key), an activity with a token and an update.
        let database = try await TestDatabase.makeMigrated()
        let secret = SecretKey.random()
        let token = String(repeating: "0", count: 63) + "7"
        try await TestDatabase.withPool(database) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            let app = AppID(rawValue: "game")!
            try await store.createApp(app, AppSettings(bundleID: "com.example.game", maxOpen: 10), by: .commandLine)
            let credentials = try APNsCredentials(
                teamID: "TEAM000001",
                keyID: "KEY0000001",
                environment: .sandbox,
                privateKeyPEM: key.pemRepresentation
            )
            _ = try await store.setAPNsCredentials(
                credentials,
                for: app,
                sealedWith: SecretKey(secret),
                by: .commandLine
            )
            let stream = StreamID(app: app, activity: ActivityID(rawValue: "order-7")!)
            for command: Command in [
                .request(.init(activityType: "Order", content: ActivityContent(contentState: .empty))),
                .registerPushToken(token),
                .update(.init(content: ActivityContent(contentState: JSONObject(["stage": .string("on the way")])))),
            ] {
                _ = try await store.execute(command, on: stream, at: Timestamp.now())
            }
        }

        let (server, _) = try await Loopback.startServer(
            ["serve"],
            database: database,
            environment: [
                "LIVELINE_SECRET_KEY": secret, "LIVELINE_APNS_SANDBOX_URL": String(address),
                "LIVELINE_APNS_CA_FILE": certificate.path,
            ]
        )
        defer { server.terminate() }
        try await Self.waitFor("the update reaches the local APNs", in: apns, server: server) {
            $0.contains("local APNs → device 00000000…") && $0.contains(#""content-state":{"stage":"on the way"}"#)
        }
        server.terminate()
        #expect(try await server.finish().status == 0)
        apns.terminate()
        let stopped = try await apns.finish()
        #expect(stopped.status == 0, "\(stopped.errors)")
    }

    @Test("a port that is taken is one line on standard error that names it")
    func portTaken() async throws {
        let (taken, port) = try await Loopback.takenPort()
        let key = FileManager.default.temporaryDirectory.appending(path: "AuthKey-\(UUID().uuidString).p8")
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: key)
        defer { try? FileManager.default.removeItem(at: key) }
        let outcome = try await LivelineProcess.start(
            ["local-apns", "--port", "\(port)", "--team-id", "T", "--key-id", "K", "--key-file", key.path]
                + ["--bundle-id", "b", "--certificate-file", "/tmp/unused.pem"],
            database: nil
        ).finish()
        try await taken.close()
        #expect(outcome.status == 1)
        #expect(outcome.errors.hasPrefix("liveline: error: cannot listen on 127.0.0.1:\(port): "), "\(outcome.errors)")
        #expect(outcome.errors.split(separator: "\n").count == 1, "\(outcome.errors)")
    }

    @Test("a key file that cannot be read, or is not a P-256 private key, is one line on standard error")
    func unusableKey() async throws {
        let notAKey = FileManager.default.temporaryDirectory.appending(path: "AuthKey-\(UUID().uuidString).p8")
        try Data("not a key".utf8).write(to: notAKey)
        defer { try? FileManager.default.removeItem(at: notAKey) }
        for (file, error) in [
            ("/nonexistent/AuthKey.p8", "cannot read the key file /nonexistent/AuthKey.p8"),
            (notAKey.path, "\(notAKey.path) is not a P-256 private key in PEM (a .p8 file)"),
        ] {
            let outcome = try await LivelineProcess.start(
                ["local-apns", "--team-id", "T", "--key-id", "K", "--key-file", file]
                    + ["--bundle-id", "b", "--certificate-file", "/tmp/unused.pem"],
                database: nil
            ).finish()
            #expect(outcome.status == 1)
            #expect(outcome.errors == "liveline: error: \(error)\n")
        }
    }

    /// Waits (up to a minute) until what `process` printed satisfies `condition`; when it does
    /// not, records what it and `server` printed.
    private static func waitFor(
        _ what: String,
        in process: LivelineProcess,
        server: LivelineProcess? = nil,
        _ condition: (String) -> Bool
    ) async throws {
        for _ in 0..<600 {
            if condition(process.outputSoFar) { return }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record(
            """
            not within a minute: \(what)
            \(process.outputSoFar)\n\(process.errorsSoFar)
            the server: \(server?.outputSoFar ?? "")\n\(server?.errorsSoFar ?? "")
            """
        )
    }
}

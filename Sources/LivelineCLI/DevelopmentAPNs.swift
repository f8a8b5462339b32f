import ActivityLifecycle
import CanonicalJSON
import Crypto
import Delivery
import EventStore
import Foundation
import LocalAPNs
import ServiceLifecycle

/// What `liveline dev` delivers to: a local APNs in the process, the demo app's credentials
/// registered with it, and a secret key kept under `.liveline/` (unless `LIVELINE_SECRET_KEY`
/// is set) so that credentials stored by one run open in the next.
enum DevelopmentAPNs {
    static let teamID = "LOCALTEAM1"
    static let keyID = "LOCALKEY01"
    /// The device token the printed curl commands register.
    static let demoDeviceToken = String(repeating: "a1b2c3d4", count: 8)
    /// The widget token the welcome's curls register for the demo device.
    static let demoWidgetToken = String(repeating: "5e2a7f01", count: 8)

    /// Starts the local APNs on `host:port` (`0`: any free port); when `printing`, each push it
    /// accepts is printed as a device would receive it, and each broadcast as every device on its
    /// channel would. It keeps none of them: it may run for days.
    static func start(host: String = "127.0.0.1", port: Int = 0, printing: Bool = true) async throws -> LocalAPNs {
        try await LocalAPNs.start(
            host: host,
            port: port,
            keepingAccepted: false,
            onAccept: printing ? Self.print : nil
        )
    }

    @Sendable private static func print(_ accepted: LocalAPNs.Accepted) {
        let line =
            switch accepted {
            case .push(let push):
                "device \(push.deviceToken.prefix(8))…"
                    + (push.pushType == "liveactivity" ? "" : " (\(push.pushType))")
                    + ": priority \(push.priority) "
                    + String(decoding: push.body, as: UTF8.self)
            case .broadcast(let broadcast):
                "channel \(broadcast.channelID): priority \(broadcast.priority) "
                    + String(decoding: broadcast.body, as: UTF8.self)
            }
        FileHandle.standardOutput.write(Data("local APNs → \(line)\n".utf8))
    }

    /// A new key for the demo app, registered with `server` and stored as the app's credentials.
    static func configureDemoApp(
        _ app: AppID,
        bundleID: String,
        on server: LocalAPNs,
        store: EventStore,
        secret: SecretKey
    )
        async throws
    {
        let key = P256.Signing.PrivateKey()
        server.register(teamID: teamID, keyID: keyID, publicKey: key.publicKey, bundleID: bundleID)
        let credentials = try APNsCredentials(
            teamID: teamID,
            keyID: keyID,
            environment: .sandbox,
            privateKeyPEM: key.pemRepresentation
        )
        _ = try await store.setAPNsCredentials(credentials, for: app, sealedWith: secret, by: .commandLine)
    }

    /// The secret in `folder/secret-key`, made (readable by its owner only) on first use.
    static func secret(under folder: URL) throws -> SecretKey {
        let file = folder.appending(path: "secret-key")
        if let text = try? String(contentsOf: file, encoding: .utf8) {
            guard let key = try? SecretKey(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw ConfigurationError(
                    "\(file.path) does not hold a secret key (\(SecretKey.howToMake)); delete it to make a new one"
                )
            }
            return key
        }
        let text = SecretKey.random()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        guard
            FileManager.default.createFile(
                atPath: file.path,
                contents: Data(text.utf8),
                attributes: [.posixPermissions: 0o600]
            )
        else { throw ConfigurationError("cannot write \(file.path)") }
        return try SecretKey(text)
    }
}

/// Runs the local APNs until graceful shutdown, after the services that send to it stop.
struct LocalAPNsService: Service {
    let server: LocalAPNs

    func run() async throws {
        try? await gracefulShutdown()
        try await server.shutdown()
    }
}

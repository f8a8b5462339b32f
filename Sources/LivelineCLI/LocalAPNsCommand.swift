import ArgumentParser
import Crypto
import Foundation
import LocalAPNs
import Logging
import ServiceLifecycle
import UnixSignals

/// `liveline local-apns`: the local APNs of `liveline dev`, in a process of its own, for trying
/// `liveline serve` without Apple (and for measuring delivery without the APNs side's work in the
/// server's CPU). It accepts the pushes of one key, checks them as APNs does, and prints them.
struct LocalAPNsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "local-apns",
        abstract: "Run a local APNs (HTTP/2, TLS, APNs' checks) that accepts one key's pushes and prints them.",
        discussion: """
            Point Liveline at it with LIVELINE_APNS_SANDBOX_URL=<the printed address> and
            LIVELINE_APNS_CA_FILE=<--certificate-file>, and give the app the same key
            (`liveline apps apns set … --environment sandbox`). Runs until SIGINT or SIGTERM.
            """
    )

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"
    @Option(help: "Port to listen on (0: any free port).")
    var port = 0
    /// The key whose provider tokens are accepted (checked with its public half).
    @OptionGroup var key: APNsKeyOptions
    @Option(
        name: .customLong("bundle-id"),
        help: "The app's bundle id (pushes go to <bundle id>.push-type.liveactivity)."
    )
    var bundleID: String
    @Option(name: .customLong("certificate-file"), help: "Where to write the server's certificate (PEM) to trust.")
    var certificateFile: String
    @Flag(help: "Do not print each push accepted.")
    var quiet = false

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be from 0 to 65535") }
    }

    func run() async throws {
        try await reportingFailures {
            let privateKey: P256.Signing.PrivateKey
            do {
                privateKey = try P256.Signing.PrivateKey(pemRepresentation: key.readKeyFile())
            } catch let error as ConfigurationError {
                throw error
            } catch {
                throw ConfigurationError("\(key.keyFile) is not a P-256 private key in PEM (a .p8 file)")
            }
            let server: LocalAPNs
            do {
                server = try await DevelopmentAPNs.start(host: host, port: port, printing: !quiet)
            } catch {
                throw cannotListen(on: host, port: port, error, "choose another --port") ?? error
            }
            server.register(teamID: key.teamID, keyID: key.keyID, publicKey: privateKey.publicKey, bundleID: bundleID)
            guard FileManager.default.createFile(atPath: certificateFile, contents: Data(server.certificatePEM.utf8))
            else {
                try? await server.shutdown()
                throw ConfigurationError("cannot write \(certificateFile)")
            }
            FileHandle.standardOutput.write(Data("local APNs listening at https://\(host):\(server.port)\n".utf8))
            var logger = Logger(label: "liveline.local-apns")
            logger.logLevel = .warning
            try await ServiceGroup(
                services: [LocalAPNsService(server: server)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            ).run()
        }
    }
}

import ActivityLifecycle
import CanonicalJSON
import Crypto
import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

/// A reload of 10,000 devices sent by `liveline serve` processes to a `liveline local-apns`, which
/// prints every push it accepts: the fan-out goes on from its cursors when its process is killed
/// and another starts, and when a second process joins and takes half the shards over.
@Suite("Reloads across processes: a fan-out survives kill -9 and handovers", .serialized)
struct ReloadProcessTests {
    static let devices = 10_000

    /// The local APNs, a database with the app, its credentials and `devices` widget tokens, and
    /// what a server needs to deliver there.
    struct World {
        let apns: LivelineProcess
        let database: String
        let environment: [String: String?]
        let app = AppID(rawValue: "game")!
        let folder: URL

        /// Device `index`'s token: its first eight hex digits (what the local APNs prints) differ.
        static func token(_ index: Int) -> String {
            String(format: "%08x", index) + String(repeating: "0", count: 56)
        }

        static func make() async throws -> World {
            let folder = FileManager.default.temporaryDirectory.appending(path: "reloads-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let key = P256.Signing.PrivateKey()
            let keyFile = folder.appending(path: "AuthKey.p8")
            let certificate = folder.appending(path: "apns.pem")
            try Data(key.pemRepresentation.utf8).write(to: keyFile)
            let apns = try LivelineProcess.start(
                ["local-apns", "--port", "0", "--team-id", "TEAM000001", "--key-id", "KEY0000001"]
                    + ["--key-file", keyFile.path, "--bundle-id", "com.example.game"]
                    + ["--certificate-file", certificate.path],
                database: nil
            )
            var address: Substring?
            for _ in 0..<600 where address == nil {
                address = apns.outputSoFar.split(separator: "\n").first { $0.hasPrefix("local APNs listening at ") }?
                    .dropFirst("local APNs listening at ".count)
                if address == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            let listening = try #require(address, "the local APNs did not start: \(apns.errorsSoFar)")
            let database = try await TestDatabase.makeMigrated()
            let secret = SecretKey.random()
            let world = World(
                apns: apns,
                database: database,
                environment: [
                    "LIVELINE_SECRET_KEY": secret, "LIVELINE_APNS_SANDBOX_URL": String(listening),
                    "LIVELINE_APNS_CA_FILE": certificate.path, "LIVELINE_DELIVERY_IN_FLIGHT": "32",
                ],
                folder: folder
            )
            try await TestDatabase.withPool(database, maximumConnections: 8) { pool in
                let store = EventStore(pool: pool, lifecycle: Lifecycle())
                try await store.createApp(world.app, AppSettings(bundleID: "com.example.game"), by: .commandLine)
                let credentials = try APNsCredentials(
                    teamID: "TEAM000001",
                    keyID: "KEY0000001",
                    environment: .sandbox,
                    privateKeyPEM: key.pemRepresentation
                )
                _ = try await store.setAPNsCredentials(
                    credentials,
                    for: world.app,
                    sealedWith: SecretKey(secret),
                    by: .commandLine
                )
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for lane in 0..<8 {
                        group.addTask {
                            for index in stride(from: lane, to: devices, by: 8) {
                                _ = try await store.registerReloadToken(
                                    token(index),
                                    widgets: [WidgetInfo(kind: "Score", family: "systemSmall")],
                                    for: ReloadTokenSlot(
                                        app: world.app,
                                        device: DeviceID(rawValue: "phone-\(index)")!,
                                        kind: .widgets
                                    )
                                )
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            return world
        }

        func withStore<T>(_ body: (EventStore) async throws -> T) async throws -> T {
            try await TestDatabase.withPool(database, maximumConnections: 2) { pool in
                try await body(EventStore(pool: pool, lifecycle: Lifecycle()))
            }
        }

        func requestReload() async throws -> AcceptedReload {
            try await withStore { store in
                try await store.requestReload(
                    ReloadTarget(kind: .widgets, widgetKinds: ["Score"]),
                    for: app,
                    from: .api(nil)
                )
            }
        }

        /// The reloads the local APNs printed so far.
        var printed: Int {
            apns.outputSoFar.split(separator: "\n").count { $0.contains("(widgets): priority 5") }
        }

        /// Waits (up to two minutes) until `condition` holds.
        func waitUntil(_ what: String, _ condition: () async throws -> Bool) async throws {
            for _ in 0..<1200 {
                if try await condition() { return }
                try await Task.sleep(for: .milliseconds(100))
            }
            Issue.record("not within two minutes: \(what); printed \(printed)")
        }

        /// Waits until every device's reload is recorded delivered; then how many pushes each
        /// device's token got, as the local APNs printed them (each once or twice, or an issue).
        func pushesPerDevice(_ reload: AcceptedReload) async throws -> [Substring: Int] {
            try await waitUntil("every device's reload delivered") {
                try await withStore { store in
                    let status = try await store.reloadStatus(reload.id, of: app)
                    return status?.fannedOut == true && status?.devices == ["delivered": devices]
                }
            }
            var counts: [Substring: Int] = [:]
            for line in apns.outputSoFar.split(separator: "\n") where line.contains("(widgets): priority 5") {
                guard let range = line.range(of: "local APNs → device ") else { continue }
                counts[line[range.upperBound...].prefix(8), default: 0] += 1
            }
            #expect(counts.count == devices, "not every device got its reload")
            #expect(counts.values.allSatisfy { (1...2).contains($0) }, "a device got its reload more than twice")
            return counts
        }

        /// `liveline serve` on the database, delivering to the local APNs, once it is ready.
        func startServer() async throws -> LivelineProcess {
            try await Loopback.startServer(["serve"], database: database, environment: environment).server
        }

        func finish() {
            apns.terminate()
            try? FileManager.default.removeItem(at: folder)
        }
    }

    @Test("killed -9 half-way and restarted: every device gets its reload, none more than twice")
    func killedHalfWay() async throws {
        let world = try await World.make()
        defer { world.finish() }
        let first = try await world.startServer()
        let reload = try await world.requestReload()
        #expect(reload.targets == Self.devices)
        try await world.waitUntil("half the devices reached") { world.printed >= Self.devices / 2 }
        first.killNow()
        _ = try await first.finish()
        let printedBefore = world.printed
        #expect(printedBefore < Self.devices, "the fan-out was over before the kill")

        let second = try await world.startServer()
        defer { second.terminate() }
        let counts = try await world.pushesPerDevice(reload)
        let twice = counts.values.count { $0 == 2 }
        // Only what was on the wire, or answered and not yet recorded, when the process died
        // (LIVELINE_DELIVERY_IN_FLIGHT is 32; answers are recorded every 20 ms) goes twice: the
        // fan-out goes on from its cursors, never from the beginning (which would send half again).
        #expect(twice < Self.devices / 20, "\(twice) devices got the reload twice")
        second.terminate()
        #expect(try await second.finish().status == 0)
    }

    @Test("handed over as a second server joins: every device gets its reload, none more than twice")
    func handover() async throws {
        let world = try await World.make()
        defer { world.finish() }
        let first = try await world.startServer()
        defer { first.terminate() }
        let reload = try await world.requestReload()
        try await world.waitUntil("a fifth of the devices reached") { world.printed >= Self.devices / 5 }
        let second = try await world.startServer()
        defer { second.terminate() }
        _ = try await world.pushesPerDevice(reload)
        // Both took part: the second took shards over before the fan-out was done.
        let owners = try await TestDatabase.withPool(world.database) { pool in
            try await pool.withConnection { connection in
                try connection.query("SELECT owner FROM reload_shards WHERE lease_expires_at > now()").map {
                    try $0.decode("owner", as: String.self)
                }
            }
        }
        #expect(Set(owners).count == 2, "\(owners)")
        first.terminate()
        second.terminate()
        #expect(try await first.finish().status == 0)
        #expect(try await second.finish().status == 0)
    }
}

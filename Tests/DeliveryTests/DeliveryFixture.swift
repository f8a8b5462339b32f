import ActivityLifecycle
import CanonicalJSON
import Crypto
import Delivery
import EventStore
import LocalAPNs
import Logging
import Metrics
import Postgres
import ServiceLifecycle
import TestSupport
import Testing

/// A migrated database with one app whose APNs credentials point at a local APNs, and delivery
/// workers to run against both.
struct DeliveryFixture {
    static let bundleID = "com.example.game"
    static let teamID = "TEAM000001"
    static let keyID = "KEY0000001"

    let database: String
    let app = AppID(rawValue: "game")!
    let server: LocalAPNs
    let secret = try! SecretKey(SecretKey.random())
    let key = P256.Signing.PrivateKey()

    /// Runs `body` with a fresh database and local APNs; `credentials: false` leaves the app
    /// without APNs credentials.
    static func run(credentials: Bool = true, _ body: (DeliveryFixture, EventStore) async throws -> Void) async throws {
        let server = try await LocalAPNs.start()
        let fixture = DeliveryFixture(database: try await TestDatabase.makeMigrated(), server: server)
        do {
            try await TestDatabase.withPool(fixture.database, maximumConnections: 6) { pool in
                let notifier = AppendNotifier(pool: pool)
                let store = EventStore(pool: pool, lifecycle: Lifecycle(), notifier: notifier)
                try await store.createApp(fixture.app, AppSettings(bundleID: bundleID, maxOpen: 1000), by: .commandLine)
                if credentials { try await fixture.setCredentials(fixture.key, in: store) }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { try await notifier.run() }
                    try await body(fixture, store)
                    group.cancelAll()
                }
            }
        } catch {
            try? await server.shutdown()
            throw error
        }
        try await server.shutdown()
    }

    /// Sets the app's credentials to `key`, registered with the local APNs.
    func setCredentials(_ key: P256.Signing.PrivateKey, keyID: String = keyID, in store: EventStore) async throws {
        server.register(teamID: Self.teamID, keyID: keyID, publicKey: key.publicKey, bundleID: Self.bundleID)
        let credentials = try APNsCredentials(
            teamID: Self.teamID,
            keyID: keyID,
            environment: .sandbox,
            privateKeyPEM: key.pemRepresentation
        )
        _ = try await store.setAPNsCredentials(credentials, for: app, sealedWith: secret, by: .commandLine)
    }

    /// Runs delivery workers (each with its own pool and listener, as separate processes have)
    /// while `body` runs, then cancels them.
    func withWorkers(
        _ count: Int = 1,
        configuration: DeliveryWorker.Configuration = DeliveryFixture.quick,
        metrics: any MetricsFactory = MetricsSystem.factory,
        _ body: () async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<count {
                group.addTask { try await runWorker(configuration: configuration, metrics: metrics) }
            }
            try await body()
            group.cancelAll()
        }
    }

    /// One worker until cancelled, logging to `logger`, reporting to `health`.
    func runWorker(
        configuration: DeliveryWorker.Configuration = DeliveryFixture.quick,
        logger: Logger = TestDatabase.logger,
        metrics: any MetricsFactory = MetricsSystem.factory,
        health: DeliveryHealth = DeliveryHealth()
    ) async throws {
        try await runService(logger: logger) { store, client, listener in
            DeliveryWorker(
                store: store,
                client: client,
                secretKey: secret,
                listener: listener,
                configuration: configuration,
                logger: logger,
                metrics: metrics,
                health: health
            )
        }
    }

    /// Runs reload workers (each with its own pool and listener, as separate processes have)
    /// while `body` runs, then cancels them.
    func withReloadWorkers(
        _ count: Int = 1,
        configuration: ReloadWorker.Configuration = DeliveryFixture.quickReloads,
        _ body: () async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<count {
                group.addTask {
                    try await runService(logger: TestDatabase.logger) { store, client, listener in
                        ReloadWorker(
                            store: store,
                            client: client,
                            secretKey: secret,
                            listener: listener,
                            configuration: configuration,
                            logger: TestDatabase.logger
                        )
                    }
                }
            }
            try await body()
            group.cancelAll()
        }
    }

    /// A worker `make` builds on a pool, an APNs client and a listener of its own (as a process
    /// has), run until cancelled.
    private func runService(
        logger: Logger,
        _ make: @escaping (EventStore, APNsClient, AppendListener) -> some Service
    ) async throws {
        let listener = try AppendListener(connectionString: database, logger: logger)
        let client = try APNsClient(
            configuration: .local(baseURL: server.baseURL, trustedCertificatePEM: server.certificatePEM),
            logger: logger
        )
        try await TestDatabase.withPool(database, maximumConnections: 3) { pool in
            let worker = make(EventStore(pool: pool, lifecycle: Lifecycle()), client, listener)
            await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await listener.run() }
                group.addTask { try await worker.run() }
                try? await group.next()
                group.cancelAll()
            }
        }
        try? await client.shutdown()
    }

    static let quickReloads: ReloadWorker.Configuration = {
        var configuration = ReloadWorker.Configuration()
        configuration.lease = .seconds(5)
        configuration.leaseRenewal = .milliseconds(200)
        configuration.initialBackoff = .milliseconds(300)
        configuration.maximumBackoff = .seconds(1)
        configuration.appRefresh = .milliseconds(100)
        return configuration
    }()

    /// Runs `body` with the app's channels managed at the local APNs.
    func withChannels(in store: EventStore, _ body: (ChannelManager) async throws -> Void) async throws {
        let client = try APNsClient(
            configuration: .local(baseURL: server.baseURL, trustedCertificatePEM: server.certificatePEM),
            logger: TestDatabase.logger
        )
        do {
            try await body(ChannelManager(store: store, client: client, secretKey: secret))
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }

    /// Quick lease renewal, app refresh and backoffs, so tests see changes and retries quickly.
    static let quick: DeliveryWorker.Configuration = {
        var configuration = DeliveryWorker.Configuration()
        // Renewed often, and long enough that a loaded machine (the whole suite at once) does not
        // let it run out under a worker that is alive: that would send its pushes twice.
        configuration.lease = .seconds(5)
        configuration.leaseRenewal = .milliseconds(200)
        configuration.initialBackoff = .milliseconds(300)
        configuration.maximumBackoff = .seconds(1)
        configuration.appRefresh = .milliseconds(100)
        return configuration
    }()

    func stream(_ id: String) -> StreamID {
        StreamID(app: app, activity: ActivityID(rawValue: id)!)
    }

    static func token(_ number: Int) -> String {
        let hex = String(number, radix: 16)
        return String(repeating: "0", count: 64 - hex.count) + hex
    }

    /// Runs a command now; it must be accepted.
    @discardableResult
    func execute(_ command: Command, on stream: StreamID, in store: EventStore) async throws -> [StoredEvent] {
        let result = try await store.execute(command, on: stream, at: Timestamp.now())
        guard case .accepted(_, let events) = result.outcome else {
            Issue.record("\(command.name) was refused: \(result.outcome)")
            return []
        }
        return events
    }

    /// An activity requested with a token registered.
    func activityWithToken(_ id: String, token: String, in store: EventStore) async throws -> StreamID {
        let stream = stream(id)
        try await execute(
            .request(.init(activityType: "Game", content: ActivityContent(contentState: .empty))),
            on: stream,
            in: store
        )
        try await execute(.registerPushToken(token), on: stream, in: store)
        return stream
    }

    static func update(_ step: Int, priority: Priority = .low) -> Command {
        .update(
            .init(
                content: ActivityContent(contentState: JSONObject(["step": .number(JSONNumber(step))])),
                priority: priority
            )
        )
    }

    /// Waits (up to 15 s) until `condition` holds.
    /// Waits until `condition` holds. The bound is generous: it returns as soon as the condition
    /// holds, and the whole suite at once starves two cores for seconds at a time.
    func eventually(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("not within 60 s: \(what)")
    }

    /// The `step` of each push a device received, in order.
    func steps(receivedBy token: String) -> [Int64] {
        server.received(by: token).compactMap { push in
            guard case .object(let root)? = try? JSONParser.parse(push.body), case .object(let aps)? = root["aps"],
                case .object(let content)? = aps["content-state"], case .number(let step)? = content["step"]
            else { return nil }
            return step.integer
        }
    }
}

import ActivityLifecycle
import CanonicalJSON
import Crypto
import Delivery
import EventStore
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LivelineHTTP
import LocalAPNs
import Logging
import Metrics
import OpenAPIRuntime
import Postgres
import Prometheus
import ServiceLifecycle
import SupportConsole
import Synchronization
import TestSupport
import Testing

/// A live server on a loopback port and a fresh migrated database, with an admin key, a clock
/// the test moves, and clients: generated from openapi.yaml, so that every response is checked
/// against the document, and raw, for requests the document would not let one write.
struct APIFixture: Sendable {
    static let adminKey = "test-admin-key"
    /// Where the console links traces to.
    static let traceURLTemplate = "https://traces.example/trace/{traceId}"

    /// The process's metrics go here (the metrics system is bootstrapped once per process).
    static let metrics: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return registry
    }()

    let raw: any TestClientProtocol
    let store: EventStore
    let clock: TestClock
    /// What the server seals APNs private keys under (`nil`: it stores none).
    let secretKey: SecretKey?

    /// Runs `body` against a new server on `database` (by default a new migrated one); with a
    /// secret key and `apns`, the apps' channels are managed at that local APNs.
    static func run(
        database: String? = nil,
        migrations: [Migration]? = nil,
        functions: [FunctionDefinition]? = nil,
        secretKey: SecretKey? = nil,
        apns: LocalAPNs? = nil,
        delivery: DeliveryHealth? = nil,
        maintenance: MaintenanceHealth? = nil,
        _ body: @Sendable (APIFixture) async throws -> Void
    ) async throws {
        let database = if let database { database } else { try await TestDatabase.makeMigrated() }
        let pool = try ConnectionPool(
            configuration: .init(connectionString: database, maximumConnections: 4, checkoutTimeout: .seconds(5)),
            logger: TestDatabase.logger
        )
        let listener = try AppendListener(connectionString: database, logger: TestDatabase.logger)
        let notifier = AppendNotifier(pool: pool)
        let store = EventStore(pool: pool, lifecycle: Lifecycle(policy: LifecyclePolicy()), notifier: notifier)
        let clock = TestClock()
        let client = try apns.map { apns in
            try APNsClient(
                configuration: .local(baseURL: apns.baseURL, trustedCertificatePEM: apns.certificatePEM),
                logger: TestDatabase.logger
            )
        }
        let app = try buildApplication(
            configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            api: APIDependencies(
                store: store,
                migrator: Migrator(
                    migrations: try migrations ?? Migration.load(from: TestDatabase.migrationsDirectory),
                    functions: try functions ?? FunctionDefinition.load(from: TestDatabase.functionsDirectory),
                    baseline: migrations == nil ? try Baseline.load(from: BaselineDump.directory) : nil,
                    pool: pool
                ),
                listener: listener,
                adminKey: adminKey,
                secretKey: secretKey,
                channels: secretKey.flatMap { key in
                    client.map { ChannelManager(store: store, client: $0, secretKey: key) }
                },
                metrics: metrics,
                delivery: delivery,
                maintenance: maintenance,
                clock: { clock.now },
                console: try SupportConsole(
                    store: store,
                    adminKey: adminKey,
                    configuration: .init(traceURLTemplate: traceURLTemplate),
                    logger: TestDatabase.logger
                )
            ),
            services: [pool, listener, notifier] + (client.map { [$0] } ?? []),
            logger: TestDatabase.logger
        )
        try await app.test(.live) { client in
            try await body(APIFixture(raw: client, store: store, clock: clock, secretKey: secretKey))
        }
    }

    /// A client presenting `key`.
    func client(key: String?) -> Client {
        Client(
            serverURL: URL(string: "http://127.0.0.1")!,
            configuration: .init(jsonEncodingOptions: [.sortedKeys]),
            transport: TestClientTransport(client: raw),
            middlewares: key.map { [BearerKey(key: $0)] } ?? []
        )
    }

    var admin: Client { client(key: Self.adminKey) }

    /// Creates an app through the admin API and returns a client with a key of it.
    func makeApp(
        _ id: String = "app-\(UUID().uuidString.prefix(8).lowercased())",
        maxOpen: Int? = nil,
        maxOpenPerDevice: Int? = nil,
        priorityBudgetPerHour: Int? = nil
    ) async throws -> (id: AppID, client: Client, key: Components.Schemas.IssuedKey) {
        let app = AppID(rawValue: id)!
        _ = try await admin.createApp(
            body: .json(
                .init(
                    appId: app,
                    bundleId: "com.example.\(id)",
                    maxOpen: maxOpen,
                    maxOpenPerDevice: maxOpenPerDevice,
                    priorityBudgetPerHour: priorityBudgetPerHour
                )
            )
        ).created
        let key = try await admin.issueKey(path: .init(appId: id)).created.body.json
        return (app, client(key: key.key), key)
    }

    /// Gives the app (bundle `com.example.<app>`, as `makeApp` makes it) sandbox credentials
    /// through the admin API, with a new key registered at `server`.
    func setCredentials(of app: AppID, registeredWith server: LocalAPNs) async throws {
        let key = P256.Signing.PrivateKey()
        server.register(
            teamID: "TEAM123456",
            keyID: "KEY1234567",
            publicKey: key.publicKey,
            bundleID: "com.example.\(app)"
        )
        _ = try await admin.setAPNsCredentials(
            path: .init(appId: app.rawValue),
            body: .json(
                .init(
                    teamId: "TEAM123456",
                    keyId: "KEY1234567",
                    environment: .sandbox,
                    privateKey: key.pemRepresentation
                )
            )
        ).ok
    }

    /// Sends a request as it is, for what the generated client cannot express.
    func send(
        _ method: HTTPRequest.Method,
        _ uri: String,
        key: String?,
        headers: HTTPFields = [:],
        body: [UInt8]? = nil,
        contentType: String? = "application/json"
    ) async throws -> TestResponse {
        var headers = headers
        if let key { headers[.authorization] = "Bearer \(key)" }
        if let contentType, body != nil, headers[.contentType] == nil { headers[.contentType] = contentType }
        return try await raw.execute(
            uri: uri,
            method: method,
            headers: headers,
            body: body.map { ByteBuffer(bytes: $0) }
        )
    }
}

/// The time commands are decided at: starts at the real time, moves when the test says.
final class TestClock: Sendable {
    private let current = Mutex(Timestamp.now())

    var now: Timestamp { current.withLock { $0 } }

    func advance(by duration: Duration) {
        current.withLock { $0 = $0 + duration }
    }
}

/// The generated client's transport over Hummingbird's test client (whole bodies, no streaming).
struct TestClientTransport: ClientTransport {
    let client: any TestClientProtocol

    func send(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var bytes: [UInt8]?
        if let body { bytes = try await [UInt8](collecting: body, upTo: 1 << 20) }
        let response = try await client.execute(
            uri: request.path ?? "/",
            method: request.method,
            headers: request.headerFields,
            body: bytes.map { ByteBuffer(bytes: $0) }
        )
        return (
            HTTPResponse(status: response.status, headerFields: response.headers),
            HTTPBody(Array(buffer: response.body))
        )
    }
}

/// Adds `Authorization: Bearer <key>`.
struct BearerKey: ClientMiddleware {
    let key: String

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = "Bearer \(key)"
        return try await next(request, body, baseURL)
    }
}

/// The problem body of a response, checked against the document's `Problem` schema.
func problem(_ response: TestResponse) throws -> Components.Schemas.Problem {
    #expect(response.headers[.contentType] == "application/problem+json")
    return try JSONDecoder().decode(Components.Schemas.Problem.self, from: Data(Array(buffer: response.body)))
}

extension Components.Schemas.Problem {
    func detail(_ key: String) -> JSONValue? { details?.members[key] }
}

/// A valid activity id, for tests.
func activityID(_ text: String) -> ActivityID { ActivityID(rawValue: text)! }

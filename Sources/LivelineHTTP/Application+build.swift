import ActivityLifecycle
public import CanonicalJSON
public import Delivery
public import EventStore
public import Hummingbird
public import Logging
import OpenAPIHummingbird
import OpenAPIRuntime
public import Prometheus
public import ServiceLifecycle
public import SupportConsole

/// What the API works with.
public struct APIDependencies: Sendable {
    public var store: EventStore
    /// Compared with the database by `/readyz`.
    public var migrator: Migrator
    /// Wakes the event stream when events are appended.
    public var listener: AppendListener
    /// The key of the admin operations; `nil` turns them off.
    public var adminKey: String?
    /// What APNs private keys are sealed under; without it none can be stored.
    public var secretKey: SecretKey?
    /// Manages the apps' broadcast channels at APNs; `nil` (no secret key to open the apps'
    /// credentials with) refuses channel requests.
    public var channels: ChannelManager?
    /// Served at `/metrics`; the process's metrics factory should write into it.
    public var metrics: PrometheusCollectorRegistry
    /// What the delivery worker reports to `/readyz`; `nil` when delivery is off.
    public var delivery: DeliveryHealth?
    /// What the log's maintenance reports to `/readyz`; `nil` when it does not run here.
    public var maintenance: MaintenanceHealth?
    /// The time commands are decided at.
    public var clock: @Sendable () -> Timestamp
    /// Whether requests are traced (a span each, continuing a caller's `traceparent`).
    public var tracing: Bool
    /// The support console served under `/console`; `nil` serves none.
    public var console: SupportConsole?

    public init(
        store: EventStore,
        migrator: Migrator,
        listener: AppendListener,
        adminKey: String?,
        secretKey: SecretKey? = nil,
        channels: ChannelManager? = nil,
        metrics: PrometheusCollectorRegistry,
        delivery: DeliveryHealth? = nil,
        maintenance: MaintenanceHealth? = nil,
        clock: @escaping @Sendable () -> Timestamp = Timestamp.now,
        tracing: Bool = false,
        console: SupportConsole? = nil
    ) {
        self.store = store
        self.migrator = migrator
        self.listener = listener
        self.adminKey = adminKey
        self.secretKey = secretKey
        self.channels = channels
        self.metrics = metrics
        self.delivery = delivery
        self.maintenance = maintenance
        self.clock = clock
        self.tracing = tracing
        self.console = console
    }
}

/// The largest request body accepted: far above the 4 KiB of attributes and content state an
/// activity may hold, far below what could hurt the server.
public let maximumRequestBodySize = 64 * 1024

/// Builds the Liveline HTTP application: the operations of openapi.yaml — the writes on
/// activities as Liveline's own routes (`ActivityWriteRoutes`), the others generated — with
/// problem responses, authentication, request metrics and the body size limit.
///
/// - Parameters:
///   - configuration: where to listen.
///   - services: what runs beside the server — the connection pool, the notification listener,
///     the deadline worker, the embedded PostgreSQL of `liveline dev` — each listed after what it
///     depends on: they start in this order and stop in the reverse order, once the server has
///     drained.
///   - beforeServing: what the server waits for before it listens (the process's start-up).
public func buildApplication(
    configuration: ApplicationConfiguration,
    api dependencies: APIDependencies,
    services: [any Service],
    beforeServing: @escaping @Sendable () async throws -> Void = {},
    logger: Logger
) throws -> some ApplicationProtocol {
    let authenticator = Authenticator(store: dependencies.store, adminKey: dependencies.adminKey)
    let api = LivelineAPI(
        dependencies: dependencies,
        authenticator: authenticator,
        document: try OpenAPIDocument.bytes(),
        logger: logger
    )
    let problems = ProblemResponses(logger: logger, store: dependencies.store)
    let operations = OperationRoutes()
    try api.registerHandlers(
        on: operations,
        configuration: .init(jsonEncodingOptions: [.sortedKeys, .withoutEscapingSlashes]),
        middlewares: [
            problems, PlainHeaders(), AuthenticationMiddleware(authenticator: authenticator),
            StrictJSONBodies(maximumBodySize: maximumRequestBodySize),
        ]
    )
    let writes = ActivityWriteRoutes<BasicRequestContext>(api: api, authenticator: authenticator, problems: problems)
    let router = Router()
    if dependencies.tracing {
        // Outermost, so that the span holds everything the request meets, refusals included.
        router.add(middleware: RequestTracing())
    }
    router.add(
        middleware: RouterProblemMiddleware(
            allowedMethods: AllowedMethods(operations.registered + ActivityWriteRoutes<BasicRequestContext>.operations)
        )
    )
    router.add(middleware: MetricsMiddleware())
    router.add(middleware: LogRequestsMiddleware(.debug))
    router.add(middleware: BodySizeLimitMiddleware(maximumBodySize: maximumRequestBodySize))
    operations.register(on: router)
    writes.register(on: router)
    dependencies.console?.register(on: router)
    var app = Application(
        router: router,
        configuration: configuration,
        services: services,
        logger: logger
    )
    app.beforeServerStarts(perform: beforeServing)
    return app
}

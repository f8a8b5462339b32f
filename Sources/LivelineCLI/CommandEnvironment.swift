import ActivityLifecycle
import ArgumentParser
import CanonicalJSON
import Delivery
import EmbeddedPostgres
import EventStore
import Foundation
import Hummingbird
import LivelineHTTP
import LogArchive
import Logging
import Metrics
import NIOCore
import Postgres
import Prometheus
import ServiceLifecycle
import SupportConsole

/// What every command sets up the same way: configuration, logging, the database pool, the
/// migrations, and the rule that failures end the program with one clear line. The one file of
/// the commands that wires the process to the database (`Postgres`); the rest use the store.
struct CommandEnvironment {
    let configuration: LivelineConfiguration
    let logger: Logger

    /// Reads the configuration and starts logging to standard error. `settings` are a command's
    /// own flags, under their configuration keys, which override the environment too.
    static func make(_ options: ConfigurationOptions, settings: [String: String] = [:]) throws -> CommandEnvironment {
        let configuration = try LivelineConfiguration(flags: options.values.merging(settings) { _, own in own })
        LoggingSystem.bootstrap { label in
            StandardErrorLogHandler(label: label, logLevel: configuration.logLevel)
        }
        return CommandEnvironment(configuration: configuration, logger: Logger(label: "liveline"))
    }

    func makePool(databaseURL: String) throws -> ConnectionPool {
        try ConnectionPool(
            configuration: .init(connectionString: databaseURL, maximumConnections: configuration.poolSize),
            logger: logger
        )
    }

    func makeMigrator(pool: ConnectionPool) throws -> Migrator {
        try Migrator.loading(from: configuration.migrationsDirectory, pool: pool)
    }

    /// The lifecycle's numbers: the platform's, with the configured durations.
    var lifecyclePolicy: LifecyclePolicy {
        var policy = LifecyclePolicy()
        policy.activeLifetime = configuration.activeLifetime
        policy.dismissalWindow = configuration.dismissalWindow
        policy.startConfirmationWindow = configuration.startConfirmationWindow
        policy.suspectAfterUnconfirmedStarts = configuration.suspectTokenAfter
        return policy
    }

    /// The HTTP application on `pool` and the services that run beside it, in dependency order:
    /// `before` (the embedded cluster and local APNs of `dev`), the pool, the notification
    /// listener, the append notifier, start-up (`Startup`: the command's `first` steps, then
    /// `prepareDatabase` and the retention's checks), and after it the deadline worker, the
    /// log's maintenance, and — when delivery is on and a secret key opens the apps' APNs keys —
    /// the APNs client and the delivery worker; the HTTP server listens once start-up is done.
    /// Sends the process's metrics to `/metrics`.
    /// - Parameter apns: where pushes go; the configured hosts when `nil`.
    func makeApplication(
        pool: ConnectionPool,
        databaseURL: String,
        migrator: Migrator,
        adminKey: String?,
        secretKey: SecretKey?,
        apns: APNsConfiguration? = nil,
        runningAfter before: [any Service] = [],
        first: @escaping @Sendable (EventStore) async throws -> Void
    ) throws -> some ApplicationProtocol {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let traces = try TraceExport.start(environment: ProcessInfo.processInfo.environment, logger: logger)
        let listener = try AppendListener(connectionString: databaseURL, logger: logger)
        let notifier = AppendNotifier(pool: pool)
        let store = EventStore(
            pool: pool,
            lifecycle: Lifecycle(policy: lifecyclePolicy),
            notifier: notifier,
            writers: configuration.writers
        )
        let retention = retentionPolicy
        let gate = StartupGate()
        let startup = Startup(gate: gate) { [self] in
            try await first(store)
            try await prepareDatabase(store)
            if let retention {
                try await check(retention, on: store)
                log(retention)
            }
        }
        let worker = DeadlineWorker(store: store, listener: listener, logger: logger)
        let maintenanceHealth = MaintenanceHealth()
        let maintenance = LogMaintenance(
            store: store,
            configuration: .init(idempotencyWindow: configuration.idempotencyWindow, retention: retention),
            health: maintenanceHealth,
            logger: logger
        )
        let client = try secretKey.map { _ in try makeAPNsClient(apns) }
        let (delivery, deliveryHealth) = deliveryServices(
            store: store,
            listener: listener,
            secretKey: secretKey,
            client: client,
            tracesPushes: traces != nil
        )
        return try buildApplication(
            configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
            api: APIDependencies(
                store: store,
                migrator: migrator,
                listener: listener,
                adminKey: adminKey,
                secretKey: secretKey,
                channels: secretKey.flatMap { key in
                    client.map { ChannelManager(store: store, client: $0, secretKey: key) }
                },
                metrics: registry,
                delivery: deliveryHealth,
                maintenance: maintenanceHealth,
                tracing: traces != nil,
                console: try SupportConsole(
                    store: store,
                    adminKey: adminKey,
                    configuration: .init(
                        sessionLifetime: configuration.consoleSessionLifetime,
                        traceURLTemplate: configuration.consoleTraceURL,
                        archiveFolder: configuration.archiveDirectory.map(ArchiveFolder.init(path:)),
                        retention: retention?.retention
                    ),
                    logger: logger
                )
            ),
            // The traces' exporter starts first and stops last, so that every span goes out.
            services: (traces.map { [$0] } ?? []) + before + [pool, listener, notifier, startup]
                + ([worker, maintenance] + delivery).map { AfterStartup(gate: gate, service: $0) },
            beforeServing: { try await gate.opened() },
            logger: logger
        )
    }

    /// Runs `app` until it is stopped. An address it cannot listen on (taken, not this host's, or
    /// a port below 1024 without the right) ends it with one line that names the address.
    func run(_ app: some ApplicationProtocol) async throws {
        do {
            try await app.runService()
        } catch {
            throw cannotListen(
                on: configuration.host,
                port: configuration.port,
                error,
                "set LIVELINE_HOST and LIVELINE_PORT"
            )
                ?? error
        }
    }

    /// The APNs client (for channel management too), the delivery worker, with what it tells
    /// `/readyz`, and the worker of widget and control reloads, unless delivery is off; none
    /// without a secret key (`client` is `nil` then).
    private func deliveryServices(
        store: EventStore,
        listener: AppendListener,
        secretKey: SecretKey?,
        client: APNsClient?,
        tracesPushes: Bool
    ) -> (services: [any Service], health: DeliveryHealth?) {
        guard let secretKey, let client else {
            logger.notice(
                "delivery to APNs is off: set LIVELINE_SECRET_KEY so the apps' APNs keys can be stored and opened"
            )
            return ([], nil)
        }
        guard configuration.delivery else {
            logger.notice("delivery to APNs is off (LIVELINE_DELIVERY=off)")
            return ([client], nil)
        }
        let health = DeliveryHealth()
        var deliveryConfiguration = DeliveryWorker.Configuration()
        deliveryConfiguration.maximumInFlight = configuration.deliveryInFlight
        deliveryConfiguration.tracesPushes = tracesPushes
        let worker = DeliveryWorker(
            store: store,
            client: client,
            secretKey: secretKey,
            listener: listener,
            configuration: deliveryConfiguration,
            logger: logger,
            health: health
        )
        var reloadConfiguration = ReloadWorker.Configuration()
        reloadConfiguration.maximumInFlight = configuration.deliveryInFlight
        let reloads = ReloadWorker(
            store: store,
            client: client,
            secretKey: secretKey,
            listener: listener,
            configuration: reloadConfiguration,
            logger: logger
        )
        return ([client, worker, reloads], health)
    }

    /// A client of APNs (`apns`, or the configured hosts), with the configured deadline.
    func makeAPNsClient(_ apns: APNsConfiguration? = nil) throws -> APNsClient {
        var apns = try apns ?? configuredAPNs()
        apns.requestTimeout = configuration.apnsTimeout
        return try APNsClient(configuration: apns, logger: logger)
    }

    /// APNs as configured: the hosts, and a certificate to trust from `LIVELINE_APNS_CA_FILE`.
    private func configuredAPNs() throws -> APNsConfiguration {
        var trusted: String? = nil
        if let file = configuration.apnsTrustedCertificateFile {
            guard let pem = try? String(contentsOf: file, encoding: .utf8) else {
                throw ConfigurationError("cannot read LIVELINE_APNS_CA_FILE \(file.path)")
            }
            trusted = pem
        }
        return APNsConfiguration(
            productionURL: configuration.apnsProductionURL,
            sandboxURL: configuration.apnsSandboxURL,
            broadcastProductionURL: configuration.apnsBroadcastProductionURL,
            broadcastSandboxURL: configuration.apnsBroadcastSandboxURL,
            channelsProductionURL: configuration.apnsChannelsProductionURL,
            channelsSandboxURL: configuration.apnsChannelsSandboxURL,
            trustedCertificatePEM: trusted
        )
    }

    /// An event store on `DATABASE_URL`, for the tools; refuses a database whose migrations are
    /// not all applied. The pool is shut down after `body`.
    func withStore<T>(_ body: (EventStore) async throws -> T) async throws -> T {
        let pool = try makePool(databaseURL: try requireDatabaseURL())
        return try await pool.using { pool in
            try await requireMigrated(try makeMigrator(pool: pool))
            return try await body(EventStore(pool: pool, lifecycle: Lifecycle(policy: lifecyclePolicy)))
        }
    }

    /// Runs `body` with the migrator of `DATABASE_URL`; the pool is shut down after it.
    func withMigrator<T>(_ body: (Migrator) async throws -> T) async throws -> T {
        try await makePool(databaseURL: try requireDatabaseURL()).using { pool in
            try await body(try makeMigrator(pool: pool))
        }
    }

    /// The configured secret key, which APNs private keys are sealed under.
    func requireSecretKey() throws -> SecretKey {
        guard let secretKey = configuration.secretKey else {
            throw ConfigurationError(
                "LIVELINE_SECRET_KEY is not set: Liveline stores APNs private keys only sealed under it "
                    + "(\(SecretKey.howToMake))"
            )
        }
        return secretKey
    }

    /// The configured database URL; commands other than `dev` have no embedded default.
    func requireDatabaseURL() throws -> String {
        guard let url = configuration.databaseURL else {
            throw ConfigurationError(
                "DATABASE_URL is not set (or --database-url): point it at PostgreSQL, or run `liveline dev` for a private one"
            )
        }
        return url
    }
}

extension EmbeddedPostgres {
    /// Creates `database` unless it exists, and returns its URL.
    func createDatabaseIfMissing(_ database: String, logger: Logger) async throws -> String {
        let pool = try ConnectionPool(
            configuration: .init(connectionString: url(database: defaultDatabase), maximumConnections: 1),
            logger: logger
        )
        try await pool.using {
            try await $0.withConnection { connection in
                let exists: Bool =
                    try connection.query("SELECT EXISTS (SELECT FROM pg_database WHERE datname = \(database))")
                    .single?.decode(0) ?? false
                if !exists {
                    try connection.execute("CREATE DATABASE \(identifier: database)")
                }
            }
        }
        return url(database: database)
    }
}

/// Runs a tool's body on an event store of `DATABASE_URL` (see `withStore`); any error becomes
/// one line on standard error and `exitCode`.
func runningOnStore(
    _ options: ConfigurationOptions,
    exitCode: ExitCode = .failure,
    _ body: (EventStore) async throws -> Void
) async throws {
    try await reportingFailures(exitCode: exitCode) {
        try await CommandEnvironment.make(options).withStore(body)
    }
}

/// Runs a command body; any error becomes one line on standard error and `exitCode` (1 unless
/// the command gives 1 another meaning).
func reportingFailures(exitCode: ExitCode = .failure, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as ExitCode {
        throw error
    } catch {
        FileHandle.standardError.write(Data("liveline: error: \(oneLine(error))\n".utf8))
        throw exitCode
    }
}

/// `error` as one line naming the address, when it is a failure to listen on `host:port` (taken,
/// not this host's, or a port below 1024 without the right); `nil` for any other error.
func cannotListen(on host: String, port: Int, _ error: any Error, _ hint: String) -> ConfigurationError? {
    guard let error = error as? IOError, [EADDRINUSE, EADDRNOTAVAIL, EACCES].contains(error.errnoCode) else {
        return nil
    }
    return ConfigurationError(
        "cannot listen on \(host):\(port): \(String(cString: strerror(error.errnoCode))) (\(hint))"
    )
}

/// An error in words an operator can act on: the database's own message rather than the
/// client-safe summary, without a stack trace.
private func oneLine(_ error: any Error) -> String {
    switch error {
    case let error as PostgresError:
        "\(error.description): \(error.message)".replacingOccurrences(of: "\n", with: " ")
    default:
        "\(error)".replacingOccurrences(of: "\n", with: " ")
    }
}

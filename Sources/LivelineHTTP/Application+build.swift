public import EventStore
public import Hummingbird
public import Logging
public import ServiceLifecycle

/// Builds the Liveline HTTP application.
///
/// - Parameters:
///   - configuration: where to listen.
///   - migrator: compared with the database by `/readyz`.
///   - services: what runs beside the server — the connection pool, the deadline worker, the
///     embedded PostgreSQL of `liveline dev` — each listed after what it depends on: they start
///     in this order and stop in the reverse order, once the server has drained.
public func buildApplication(
    configuration: ApplicationConfiguration,
    migrator: Migrator,
    services: [any Service],
    logger: Logger
) -> some ApplicationProtocol {
    let router = Router()
    router.add(middleware: LogRequestsMiddleware(.debug))
    HealthController(migrator: migrator).addRoutes(to: router)
    return Application(
        router: router,
        configuration: configuration,
        services: services,
        logger: logger
    )
}

public import EventStore
public import Hummingbird
public import Logging
public import Postgres
public import ServiceLifecycle

/// Builds the Liveline HTTP application.
///
/// - Parameters:
///   - configuration: where to listen.
///   - pool: the database; also run as a service so it closes after the server has drained.
///   - migrator: compared with the database by `/readyz`.
///   - services: more services to run beside the server (for example the embedded PostgreSQL
///     of `liveline dev`); they start before the pool and stop after it.
public func buildApplication(
    configuration: ApplicationConfiguration,
    pool: ConnectionPool,
    migrator: Migrator,
    services: [any Service] = [],
    logger: Logger
) -> some ApplicationProtocol {
    let router = Router()
    router.add(middleware: LogRequestsMiddleware(.debug))
    HealthController(migrator: migrator).addRoutes(to: router)
    return Application(
        router: router,
        configuration: configuration,
        services: services + [pool],
        logger: logger
    )
}

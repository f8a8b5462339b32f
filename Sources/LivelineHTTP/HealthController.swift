import EventStore
import Hummingbird
import Logging
import Postgres

/// `/healthz` (the process answers) and `/readyz` (the database answers and its schema is current).
struct HealthController: Sendable {
    let migrator: Migrator

    func addRoutes(to router: Router<some RequestContext>) {
        router.get("healthz") { _, _ in
            HealthStatus(status: "ok")
        }
        router.get("readyz") { _, context in
            try await readiness(logger: context.logger)
        }
    }

    private func readiness(logger: Logger) async throws -> HealthStatus {
        let status: Migrator.Status
        do {
            status = try await migrator.status()
        } catch let error as PostgresError {
            logger.warning("readiness check failed", metadata: ["error": "\(String(reflecting: error))"])
            throw Problem(
                status: .serviceUnavailable,
                code: "database_unavailable",
                detail: "The database is not reachable."
            )
        } catch let error as MigrationError {
            throw Problem(status: .serviceUnavailable, code: "migrations_mismatch", detail: error.description)
        }
        guard status.isCurrent else {
            let pending = status.pending.map(\.fileName).joined(separator: ", ")
            throw Problem(
                status: .serviceUnavailable,
                code: "migrations_pending",
                detail: "Migrations not applied yet: \(pending). Run `liveline migrate`."
            )
        }
        return HealthStatus(status: "ready")
    }
}

/// The body of a successful health check.
struct HealthStatus: ResponseEncodable {
    let status: String
}

import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventStore
import HTTPTypes
import Logging
import OpenAPIRuntime
import Prometheus

extension LivelineAPI {
    func getHealth(_ input: Operations.GetHealth.Input) async throws -> Operations.GetHealth.Output {
        .ok(.init(body: .json(.init(status: "ok"))))
    }

    func getReadiness(_ input: Operations.GetReadiness.Input) async throws -> Operations.GetReadiness.Output {
        let status: Migrator.Status
        do {
            status = try await dependencies.migrator.status()
        } catch EventStoreError.databaseFailure(let failure) {
            logger.warning("readiness check failed", metadata: ["error": "\(failure.details)"])
            throw Problem.databaseUnavailable
        } catch let error as MigrationError {
            throw Problem(.serviceUnavailable, code: "migrations_mismatch", detail: error.description)
        }
        guard status.isCurrent else {
            let pending = status.pendingFiles.joined(separator: ", ")
            throw Problem(
                .serviceUnavailable,
                code: "migrations_pending",
                detail: "Migrations not applied yet: \(pending). Run `liveline migrate`."
            )
        }
        var degradations: [Components.Schemas.Degradation] = []
        let unreadable = dependencies.delivery?.unreadableStreams ?? 0
        if unreadable > 0 {
            degradations.append(
                .init(
                    code: "delivery_unreadable_streams",
                    detail: "Delivery cannot fold the log of \(unreadable) activities: their pushes wait while their "
                        + "histories are loaded again. The error log names them and says why."
                )
            )
        }
        if let failure = dependencies.maintenance?.failure {
            degradations.append(
                .init(
                    code: "maintenance_failing",
                    detail: "A job of the log's maintenance failed (\(failure)): what it does waits until one of its "
                        + "runs succeeds (`partitions` creates the log's partitions ahead; `retention` expires idempotency "
                        + "keys and retires partitions). Each job is tried again every minute; the error log has each failure."
                )
            )
        }
        guard degradations.isEmpty else {
            return .ok(.init(body: .json(.init(status: "degraded", degraded: degradations))))
        }
        return .ok(.init(body: .json(.init(status: "ready"))))
    }

    func getMetrics(_ input: Operations.GetMetrics.Input) async throws -> Operations.GetMetrics.Output {
        let registry = dependencies.metrics
        do {
            let open = try await store.openActivitiesByState()
            for state in ActivityState.allCases where state.isOpen {
                registry.makeGauge(descriptor: Self.openActivities, labels: [("state", state.rawValue)])
                    .set(Double(open[state, default: 0]))
            }
        } catch let error as EventStoreError {
            // The other metrics still matter most when the database is away.
            logger.warning("could not count open activities", metadata: ["error": "\(error)"])
        }
        return .ok(.init(body: .plainText(HTTPBody(registry.emitToBuffer()))))
    }

    private static var openActivities: MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "liveline",
            metricName: "open",
            unitName: "activities",
            helpText: "Open activities of all apps, by state, counted when scraped."
        )
    }

    func getOpenAPIDocument(
        _ input: Operations.GetOpenAPIDocument.Input
    ) async throws -> Operations.GetOpenAPIDocument.Output {
        .ok(.init(body: .yaml(HTTPBody(document))))
    }
}

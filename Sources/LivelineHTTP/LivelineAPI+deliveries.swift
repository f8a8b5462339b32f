import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventStore

extension LivelineAPI {
    func listActivityDeliveries(
        _ input: Operations.ListActivityDeliveries.Input
    ) async throws -> Operations.ListActivityDeliveries.Output {
        let activity = try stream(input.path.activityId)
        let limit = try Self.limit(input.query.limit, default: 100, maximum: 1000)
        let deliveries = try await store.deliveries(of: activity, limit: limit)
        if deliveries.isEmpty, try await store.activity(activity) == nil { throw Problem(Rejection.activityNotFound) }
        return .ok(.init(body: .json(.init(deliveries: deliveries.map(Components.Schemas.Delivery.init)))))
    }
}

extension Components.Schemas.Delivery {
    init(_ record: DeliveryRecord) {
        self.init(
            position: record.position,
            version: record.version,
            // The document lists every outcome the store records.
            outcome: Components.Schemas.DeliveryOutcome(rawValue: record.outcome.rawValue)!,
            attempt: record.attempt,
            apnsId: record.apnsID,
            deviceToken: record.deviceToken,
            channelId: record.channelID,
            priority: record.priority,
            status: record.status,
            reason: record.reason,
            latencyMs: record.latency.map { Double($0.microseconds) / 1000 },
            attemptedAt: record.attemptedAt
        )
    }
}

extension Components.Schemas.TokenLink {
    init(_ link: TokenLineage.Link) {
        self.init(
            kind: link.kind == .pushToStart ? .pushToStart : .push,
            token: link.token,
            version: link.version,
            since: link.since,
            invalidated: link.invalidation.map { death in
                .init(
                    status: death.status,
                    reason: death.reason,
                    invalidSince: death.invalidSince,
                    recordedAt: death.recordedAt
                )
            }
        )
    }
}

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

    func listDevicePushes(
        _ input: Operations.ListDevicePushes.Input
    ) async throws -> Operations.ListDevicePushes.Output {
        guard let device = DeviceID(rawValue: input.path.deviceId) else {
            throw Problem.invalidRequest(
                "The device id in the path must be \(IdentifierRules.requirement).",
                field: "deviceId"
            )
        }
        let limit = try Self.limit(input.query.limit, default: 100, maximum: 1000)
        let pushes = try await store.pushes(to: device, of: try Caller.app(), limit: limit)
        return .ok(.init(body: .json(.init(pushes: pushes.map(Components.Schemas.DevicePush.init)))))
    }
}

extension Components.Schemas.DevicePush {
    init(_ push: DevicePush) {
        var pushType = PushTypePayload.liveactivity
        var activity: (ActivityID, Int)? = nil
        var reload: (Int64, ReloadKind)? = nil
        switch push.source {
        case .activity(let id, let version): activity = (id, version)
        case .reload(let id, let kind):
            reload = (id, kind)
            pushType = kind == .widgets ? .widgets : .controls
        }
        self.init(
            pushType: pushType,
            activityId: activity?.0,
            version: activity?.1,
            reloadId: reload?.0,
            controlKind: reload.flatMap { $0.1 == .widgets ? nil : $0.1.controlKind },
            // The document lists every outcome the store records.
            outcome: OutcomePayload(rawValue: push.outcome)!,
            attempt: push.attempt,
            apnsId: push.apnsID,
            deviceToken: push.deviceToken,
            channelId: push.channelID,
            priority: push.priority,
            status: push.status,
            reason: push.reason,
            latencyMs: push.latency.map { Double($0.microseconds) / 1000 },
            attemptedAt: push.attemptedAt
        )
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

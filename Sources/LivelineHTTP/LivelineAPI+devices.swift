import ActivityLifecycle
import EventStore

extension LivelineAPI {
    func registerPushToStartToken(
        _ input: Operations.RegisterPushToStartToken.Input
    ) async throws -> Operations.RegisterPushToStartToken.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        guard body.pushToStartToken.isVisibleASCII(lengths: 1...512) else {
            throw Problem.invalidRequest(
                "pushToStartToken must be 1–512 visible ASCII characters.",
                field: "/pushToStartToken"
            )
        }
        let slot = try slot(input.path.deviceId, input.path.activityType)
        let (token, _) = try await store.registerPushToStartToken(body.pushToStartToken, for: slot)
        return .ok(.init(body: .json(.init(token))))
    }

    func getPushToStartToken(
        _ input: Operations.GetPushToStartToken.Input
    ) async throws -> Operations.GetPushToStartToken.Output {
        let slot = try slot(input.path.deviceId, input.path.activityType)
        guard let token = try await store.pushToStartToken(of: slot) else {
            throw Problem.pushToStartTokenNotFound(slot)
        }
        return .ok(.init(body: .json(.init(token))))
    }

    func removePushToStartToken(
        _ input: Operations.RemovePushToStartToken.Input
    ) async throws -> Operations.RemovePushToStartToken.Output {
        let slot = try slot(input.path.deviceId, input.path.activityType)
        guard try await store.removePushToStartToken(of: slot) else { throw Problem.pushToStartTokenNotFound(slot) }
        return .noContent(.init())
    }

    /// The calling app's slot that the path names.
    private func slot(_ deviceID: String, _ activityType: String) throws -> PushToStartSlot {
        guard let device = DeviceID(rawValue: deviceID) else {
            throw Problem.invalidRequest(
                "The device id in the path must be \(IdentifierRules.requirement).",
                field: "deviceId"
            )
        }
        guard (1...IdentifierRules.maximumLength).contains(activityType.unicodeScalars.count),
            !activityType.unicodeScalars.contains("\u{0}")
        else {
            throw Problem.invalidRequest(
                "The activity type in the path must be 1–128 characters.",
                field: "activityType"
            )
        }
        return PushToStartSlot(app: try Caller.app(), device: device, activityType: activityType)
    }
}

extension Components.Schemas.PushToStartToken {
    init(_ token: PushToStartToken) {
        self.init(
            deviceId: token.slot.device,
            activityType: token.slot.activityType,
            pushToStartToken: token.current?.token,
            registeredAt: token.current?.registeredAt,
            changes: token.changes.map { change in
                .init(
                    change: .init(rawValue: change.kind.rawValue)!,
                    pushToStartToken: change.token,
                    status: change.status,
                    reason: change.reason,
                    invalidSince: change.invalidSince,
                    changedAt: change.changedAt
                )
            }
        )
    }
}

import ActivityLifecycle
import EventStore

extension LivelineAPI {
    func requestReload(_ input: Operations.RequestReload.Input) async throws -> Operations.RequestReload.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let app = try Caller.app()
        let target = try Self.target(of: body)
        let idempotency = try input.headers.idempotencyKey.map(IdempotencyKeys.validated).map { key in
            IdempotencyKey(
                key: key,
                requestDigest: try IdempotencyKeys.digest(Operations.RequestReload.id, nil, nil, body: body)
            )
        }
        let accepted = try await store.requestReload(target, for: app, from: .api(idempotency))
        guard let status = try await store.reloadStatus(accepted.id, of: app) else {
            throw Problem.reloadNotFound(accepted.id)
        }
        return .accepted(.init(body: .json(.init(status))))
    }

    func getReload(_ input: Operations.GetReload.Input) async throws -> Operations.GetReload.Output {
        guard let status = try await store.reloadStatus(input.path.reloadId, of: try Caller.app()) else {
            throw Problem.reloadNotFound(input.path.reloadId)
        }
        return .ok(.init(body: .json(.init(status))))
    }

    /// What the request reloads and where, with the rules its schema cannot say checked (each
    /// refusal, a 422 `invalid_reload`, names its field).
    private static func target(of body: Components.Schemas.ReloadRequest) throws -> ReloadTarget {
        let kind: ReloadKind
        switch body.pushType {
        case .widgets:
            guard body.controlKind == nil else {
                throw Problem.invalidReload("controlKind is for a reload of controls.", field: "/controlKind")
            }
            kind = .widgets
        case .controls:
            guard let controlKind = body.controlKind else {
                throw Problem.invalidReload("A reload of controls names the controlKind.", field: "/controlKind")
            }
            guard body.widgetKinds == nil else {
                throw Problem.invalidReload("widgetKinds is for a reload of widgets.", field: "/widgetKinds")
            }
            kind = .control(try name(controlKind, maximum: 128, field: "/controlKind"))
        }
        let widgetKinds = try body.widgetKinds?.enumerated().map { index, widgetKind in
            try name(widgetKind, maximum: 128, field: "/widgetKinds/\(index)")
        }
        switch (body.deviceIds, body.allDevices ?? false) {
        case (nil, false), (.some, true):
            throw Problem.invalidReload(
                "Name the devices (deviceIds) or ask for every device of the app (allDevices: true), not both.",
                field: "/deviceIds"
            )
        case (nil, true):
            guard kind != .widgets || widgetKinds != nil else {
                throw Problem.invalidReload(
                    "A reload of widgets on every device names the widget kinds it is for (widgetKinds).",
                    field: "/widgetKinds"
                )
            }
            return ReloadTarget(kind: kind, widgetKinds: widgetKinds)
        case (let devices?, false):
            return ReloadTarget(kind: kind, widgetKinds: widgetKinds, devices: devices)
        }
    }
}

extension Components.Schemas.Reload {
    init(_ status: ReloadStatus) {
        let target = status.reload.target
        self.init(
            reloadId: status.reload.id,
            pushType: target.kind == .widgets ? .widgets : .controls,
            controlKind: target.kind == .widgets ? nil : target.kind.controlKind,
            widgetKinds: target.widgetKinds,
            deviceIds: target.devices,
            allDevices: target.devices == nil,
            activityId: status.activity,
            version: status.version,
            targets: status.reload.targets,
            requestedAt: status.reload.requestedAt,
            fannedOut: status.fannedOut,
            devices: .init(additionalProperties: status.devices)
        )
    }
}

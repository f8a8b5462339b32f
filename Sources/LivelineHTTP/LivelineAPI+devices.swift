import ActivityLifecycle
import EventStore

extension LivelineAPI {
    func registerPushToStartToken(
        _ input: Operations.RegisterPushToStartToken.Input
    ) async throws -> Operations.RegisterPushToStartToken.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let registered = try Self.token(body.pushToStartToken, field: "pushToStartToken")
        let slot = try slot(input.path.deviceId, input.path.activityType)
        let (token, _) = try await store.registerPushToStartToken(registered, for: slot)
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

    func registerWidgetPushToken(
        _ input: Operations.RegisterWidgetPushToken.Input
    ) async throws -> Operations.RegisterWidgetPushToken.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let token = try Self.token(body.widgetPushToken, field: "widgetPushToken")
        let widgets = try body.widgets.enumerated().map { index, widget in
            WidgetInfo(
                kind: try Self.name(widget.kind, maximum: 128, field: "/widgets/\(index)/kind"),
                family: try Self.name(widget.family, maximum: 64, field: "/widgets/\(index)/family")
            )
        }
        let slot = try widgetSlot(input.path.deviceId)
        let (registered, _) = try await store.registerReloadToken(token, widgets: widgets, for: slot)
        return .ok(.init(body: .json(.init(registered, of: slot))))
    }

    func getWidgetPushToken(
        _ input: Operations.GetWidgetPushToken.Input
    ) async throws -> Operations.GetWidgetPushToken.Output {
        let slot = try widgetSlot(input.path.deviceId)
        guard let token = try await store.reloadToken(of: slot) else { throw Problem.reloadTokenNotFound(slot) }
        return .ok(.init(body: .json(.init(token, of: slot))))
    }

    func removeWidgetPushToken(
        _ input: Operations.RemoveWidgetPushToken.Input
    ) async throws -> Operations.RemoveWidgetPushToken.Output {
        let slot = try widgetSlot(input.path.deviceId)
        guard try await store.removeReloadToken(of: slot) else { throw Problem.reloadTokenNotFound(slot) }
        return .noContent(.init())
    }

    func registerControlPushToken(
        _ input: Operations.RegisterControlPushToken.Input
    ) async throws -> Operations.RegisterControlPushToken.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let token = try Self.token(body.controlPushToken, field: "controlPushToken")
        let slot = try controlSlot(input.path.deviceId, input.path.controlKind)
        let (registered, _) = try await store.registerReloadToken(token, widgets: [], for: slot)
        return .ok(.init(body: .json(.init(registered, of: slot))))
    }

    func getControlPushToken(
        _ input: Operations.GetControlPushToken.Input
    ) async throws -> Operations.GetControlPushToken.Output {
        let slot = try controlSlot(input.path.deviceId, input.path.controlKind)
        guard let token = try await store.reloadToken(of: slot) else { throw Problem.reloadTokenNotFound(slot) }
        return .ok(.init(body: .json(.init(token, of: slot))))
    }

    func removeControlPushToken(
        _ input: Operations.RemoveControlPushToken.Input
    ) async throws -> Operations.RemoveControlPushToken.Output {
        let slot = try controlSlot(input.path.deviceId, input.path.controlKind)
        guard try await store.removeReloadToken(of: slot) else { throw Problem.reloadTokenNotFound(slot) }
        return .noContent(.init())
    }

    /// The calling app's slot that the path names.
    private func slot(_ deviceID: String, _ activityType: String) throws -> PushToStartSlot {
        PushToStartSlot(
            app: try Caller.app(),
            device: try Self.device(deviceID),
            activityType: try Self.name(activityType, maximum: IdentifierRules.maximumLength, field: "activityType")
        )
    }

    private func widgetSlot(_ deviceID: String) throws -> ReloadTokenSlot {
        ReloadTokenSlot(app: try Caller.app(), device: try Self.device(deviceID), kind: .widgets)
    }

    private func controlSlot(_ deviceID: String, _ controlKind: String) throws -> ReloadTokenSlot {
        ReloadTokenSlot(
            app: try Caller.app(),
            device: try Self.device(deviceID),
            kind: .control(try Self.name(controlKind, maximum: 128, field: "controlKind"))
        )
    }

    private static func device(_ deviceID: String) throws -> DeviceID {
        guard let device = DeviceID(rawValue: deviceID) else {
            throw Problem.invalidRequest(
                "The device id in the path must be \(IdentifierRules.requirement).",
                field: "deviceId"
            )
        }
        return device
    }

    /// A name the app's code gives (an activity type, a widget or control kind, a family): any
    /// characters but NUL, at least one and at most `maximum`.
    static func name(_ name: String, maximum: Int, field: String) throws(Problem) -> String {
        guard (1...maximum).contains(name.unicodeScalars.count), !name.unicodeScalars.contains("\u{0}") else {
            throw Problem.invalidRequest("\(field) must be 1–\(maximum) characters.", field: field)
        }
        return name
    }

    private static func token(_ token: String, field: String) throws -> String {
        guard token.isVisibleASCII(lengths: 1...512) else {
            throw Problem.invalidRequest("\(field) must be 1–512 visible ASCII characters.", field: "/\(field)")
        }
        return token
    }
}

extension Components.Schemas.PushToStartToken {
    init(_ token: PushToStartToken) {
        self.init(
            deviceId: token.slot.device,
            activityType: token.slot.activityType,
            pushToStartToken: token.current?.token,
            registeredAt: token.current?.registeredAt,
            unconfirmedStartsInARow: token.current?.unconfirmedStartsInARow,
            suspect: token.current?.isSuspect,
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

extension Components.Schemas.WidgetPushToken {
    init(_ token: ReloadToken?, of slot: ReloadTokenSlot) {
        self.init(
            deviceId: slot.device,
            widgetPushToken: token?.current?.token,
            widgets: token?.current.map { $0.widgets.map(Components.Schemas.WidgetInfo.init) },
            registeredAt: token?.current?.registeredAt,
            changes: token?.changes.map(Components.Schemas.ReloadTokenChange.init) ?? []
        )
    }
}

extension Components.Schemas.ControlPushToken {
    init(_ token: ReloadToken?, of slot: ReloadTokenSlot) {
        self.init(
            deviceId: slot.device,
            controlKind: slot.kind.controlKind,
            controlPushToken: token?.current?.token,
            registeredAt: token?.current?.registeredAt,
            changes: token?.changes.map(Components.Schemas.ReloadTokenChange.init) ?? []
        )
    }
}

extension Components.Schemas.WidgetInfo {
    init(_ widget: WidgetInfo) {
        self.init(kind: widget.kind, family: widget.family)
    }
}

extension Components.Schemas.ReloadTokenChange {
    init(_ change: TokenChange) {
        self.init(
            change: .init(rawValue: change.kind.rawValue)!,
            token: change.token,
            widgets: change.widgets?.map(Components.Schemas.WidgetInfo.init),
            status: change.status,
            reason: change.reason,
            invalidSince: change.invalidSince,
            changedAt: change.changedAt
        )
    }
}

import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation

extension LivelineAPI {
    func createApp(_ input: Operations.CreateApp.Input) async throws -> Operations.CreateApp.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let settings = try AppSettings.validated(
            Components.Schemas.AppSettings(
                bundleId: body.bundleId,
                maxOpen: body.maxOpen,
                maxOpenPerDevice: body.maxOpenPerDevice,
                priorityBudgetPerHour: body.priorityBudgetPerHour,
                frequentUpdates: body.frequentUpdates,
                pushToStartBudgetPerHour: body.pushToStartBudgetPerHour,
                widgetReloadIntervalSeconds: body.widgetReloadIntervalSeconds,
                controlReloadIntervalSeconds: body.controlReloadIntervalSeconds
            ),
            over: AppSettings(bundleID: body.bundleId)
        )
        do {
            try await store.createApp(body.appId, settings, by: .adminAPI)
        } catch EventStoreError.appExists {
            throw Problem.appExists(body.appId)
        }
        return .created(.init(body: .json(.init(try await summary(of: body.appId)))))
    }

    func listApps(_ input: Operations.ListApps.Input) async throws -> Operations.ListApps.Output {
        .ok(.init(body: .json(.init(apps: try await store.apps().map { .init($0) }))))
    }

    func updateApp(_ input: Operations.UpdateApp.Input) async throws -> Operations.UpdateApp.Output {
        guard case .json(let changes) = input.body else { preconditionFailure("the only content type") }
        let app = try Self.appID(input.path.appId)
        let current = try await summary(of: app)
        try await store.updateApp(app, try AppSettings.validated(changes, over: current.settings), by: .adminAPI)
        return .ok(.init(body: .json(.init(try await summary(of: app)))))
    }

    func issueKey(_ input: Operations.IssueKey.Input) async throws -> Operations.IssueKey.Output {
        let key = try await store.issueKey(for: try Self.appID(input.path.appId), by: .adminAPI)
        return .created(
            .init(body: .json(.init(keyId: key.keyID.uuidString.lowercased(), appId: key.app, key: key.secret)))
        )
    }

    func revokeKey(_ input: Operations.RevokeKey.Input) async throws -> Operations.RevokeKey.Output {
        let app = try Self.appID(input.path.appId)
        guard let keyID = UUID(uuidString: input.path.keyId),
            try await store.revokeKey(keyID, of: app, by: .adminAPI)
        else {
            throw Problem.keyNotFound(input.path.keyId)
        }
        authenticator.forget(keyID)
        return .noContent(.init())
    }

    func setLimits(_ input: Operations.SetLimits.Input) async throws -> Operations.SetLimits.Output {
        guard case .json(let limits) = input.body else { preconditionFailure("the only content type") }
        try AppSettings.checked { () throws(InvalidAppSettings) in
            try AppSettings.check(limits.globalMaxOpen, field: "globalMaxOpen", minimum: 0)
        }
        try await store.setGlobalMaxOpen(limits.globalMaxOpen, by: .adminAPI)
        return .ok(.init(body: .json(limits)))
    }

    private func summary(of app: AppID) async throws -> AppSummary {
        guard let summary = try await store.app(app) else { throw Problem.appNotFound(app) }
        return summary
    }

    static func appID(_ text: String) throws -> AppID {
        guard let app = AppID(rawValue: text) else {
            throw Problem.invalidRequest(
                "The app id in the path must be \(IdentifierRules.requirement).",
                field: "appId"
            )
        }
        return app
    }
}

extension AppSettings {
    /// `current` with the fields `changes` gives, held to the rules of every app's settings;
    /// `maxOpenPerDevice` 0 removes the per-device cap.
    static func validated(_ changes: Components.Schemas.AppSettings, over current: AppSettings) throws -> AppSettings {
        var settings = current
        settings.bundleID = changes.bundleId ?? settings.bundleID
        settings.maxOpen = changes.maxOpen ?? settings.maxOpen
        if let maxOpenPerDevice = changes.maxOpenPerDevice {
            try checked { () throws(InvalidAppSettings) in
                try check(maxOpenPerDevice, field: "maxOpenPerDevice", minimum: 0)
            }
            settings.maxOpenPerDevice = maxOpenPerDevice == 0 ? nil : maxOpenPerDevice
        }
        settings.priorityBudgetPerHour = changes.priorityBudgetPerHour ?? settings.priorityBudgetPerHour
        settings.frequentUpdates = changes.frequentUpdates ?? settings.frequentUpdates
        settings.pushToStartBudgetPerHour = changes.pushToStartBudgetPerHour ?? settings.pushToStartBudgetPerHour
        settings.widgetReloadIntervalSeconds =
            changes.widgetReloadIntervalSeconds ?? settings.widgetReloadIntervalSeconds
        settings.controlReloadIntervalSeconds =
            changes.controlReloadIntervalSeconds ?? settings.controlReloadIntervalSeconds
        return try checked { () throws(InvalidAppSettings) in try settings.validated() }
    }

    /// Runs a check, answering a broken rule as a 400 naming the field.
    static func checked<T>(_ check: () throws(InvalidAppSettings) -> T) throws -> T {
        do {
            return try check()
        } catch {
            throw Problem.invalidRequest("\(error.field) \(error.reason).", field: "/\(error.field)")
        }
    }
}

import ActivityLifecycle
import EventStore
import Foundation
import Postgres

extension LivelineAPI {
    func createApp(_ input: Operations.CreateApp.Input) async throws -> Operations.CreateApp.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let settings = try AppSettings.validated(
            Components.Schemas.AppSettings(
                bundleId: body.bundleId,
                maxOpen: body.maxOpen,
                maxOpenPerDevice: body.maxOpenPerDevice,
                priorityBudgetPerHour: body.priorityBudgetPerHour,
                frequentUpdates: body.frequentUpdates
            ),
            over: AppSettings(bundleID: body.bundleId)
        )
        do {
            try await store.createApp(body.appId, settings)
        } catch let error as PostgresError where error.isUniqueViolation {
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
        try await store.updateApp(app, try AppSettings.validated(changes, over: current.settings))
        return .ok(.init(body: .json(.init(try await summary(of: app)))))
    }

    func issueKey(_ input: Operations.IssueKey.Input) async throws -> Operations.IssueKey.Output {
        let key = try await store.issueKey(for: try Self.appID(input.path.appId))
        return .created(
            .init(body: .json(.init(keyId: key.keyID.uuidString.lowercased(), appId: key.app, key: key.secret)))
        )
    }

    func revokeKey(_ input: Operations.RevokeKey.Input) async throws -> Operations.RevokeKey.Output {
        let app = try Self.appID(input.path.appId)
        guard let keyID = UUID(uuidString: input.path.keyId),
            try await store.revokeKey(keyID, of: app)
        else {
            throw Problem.keyNotFound(input.path.keyId)
        }
        authenticator.forget(keyID)
        return .noContent(.init())
    }

    func setLimits(_ input: Operations.SetLimits.Input) async throws -> Operations.SetLimits.Output {
        guard case .json(let limits) = input.body else { preconditionFailure("the only content type") }
        try AppSettings.checkCount(limits.globalMaxOpen, field: "globalMaxOpen", minimum: 0)
        try await store.setGlobalMaxOpen(limits.globalMaxOpen)
        return .ok(.init(body: .json(limits)))
    }

    private func summary(of app: AppID) async throws -> AppSummary {
        guard let summary = try await store.app(app) else { throw Problem.appNotFound(app) }
        return summary
    }

    private static func appID(_ text: String) throws -> AppID {
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
    /// `current` with the fields `changes` gives, each checked: caps and budgets are counts that
    /// fit the database's 32-bit columns; `maxOpenPerDevice` 0 removes the per-device cap.
    static func validated(_ changes: Components.Schemas.AppSettings, over current: AppSettings) throws -> AppSettings {
        var settings = current
        if let bundleID = changes.bundleId {
            guard (1...255).contains(bundleID.utf8.count) else {
                throw Problem.invalidRequest("bundleId must be 1–255 bytes.", field: "/bundleId")
            }
            settings.bundleID = bundleID
        }
        if let maxOpen = changes.maxOpen {
            try checkCount(maxOpen, field: "/maxOpen", minimum: 0)
            settings.maxOpen = maxOpen
        }
        if let maxOpenPerDevice = changes.maxOpenPerDevice {
            try checkCount(maxOpenPerDevice, field: "/maxOpenPerDevice", minimum: 0)
            settings.maxOpenPerDevice = maxOpenPerDevice == 0 ? nil : maxOpenPerDevice
        }
        if let budget = changes.priorityBudgetPerHour {
            try checkCount(budget, field: "/priorityBudgetPerHour", minimum: 0)
            settings.priorityBudgetPerHour = budget
        }
        if let frequentUpdates = changes.frequentUpdates {
            settings.frequentUpdates = frequentUpdates
        }
        return settings
    }

    static func checkCount(_ value: Int, field: String, minimum: Int) throws {
        guard value >= minimum, value <= Int(Int32.max) else {
            throw Problem.invalidRequest("\(field) must be between \(minimum) and \(Int32.max).", field: field)
        }
    }
}

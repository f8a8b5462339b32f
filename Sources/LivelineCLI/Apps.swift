import ActivityLifecycle
import ArgumentParser
import CanonicalJSON
import EventLogTools
import EventStore
import Foundation

/// `liveline apps …`: apps, their keys, caps and budgets, and the global cap — the operations of
/// the admin API, held to the same rules, for operators at a shell.
struct Apps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Create and list apps, issue and revoke their keys, set caps, budgets, APNs credentials and broadcast channels, "
            + "show the audit trail.",
        subcommands: [
            Create.self, List.self, Change.self, IssueKey.self, RevokeKey.self, GlobalCap.self, History.self, APNs.self,
            Channels.self,
        ]
    )

    /// The app an `apps` subcommand works on, checked before anything connects.
    struct AppArgument: ParsableArguments {
        @Argument(help: "The app id: 1–128 characters of A-Z a-z 0-9 . _ : -")
        var app: String

        var id: AppID { AppID(rawValue: app)! }

        func validate() throws {
            guard AppID(rawValue: app) != nil else {
                throw ValidationError("the app id must be \(IdentifierRules.requirement)")
            }
        }
    }

    /// Caps and budget as flags; absent flags keep the current value (or the default).
    struct SettingsOptions: ParsableArguments {
        @Option(name: .customLong("bundle-id"), help: "The app's bundle id.")
        var bundleID: String?

        @Option(name: .customLong("max-open"), help: "Cap on the app's open activities (default 5).")
        var maxOpen: Int?

        @Option(name: .customLong("max-open-per-device"), help: "Cap on one device's open activities; 0 for none.")
        var maxOpenPerDevice: Int?

        @Option(name: .customLong("priority-budget"), help: "Priority-10 updates per activity per hour (default 10).")
        var priorityBudgetPerHour: Int?

        @Option(name: .customLong("frequent-updates"), help: "true when the app has the frequent-updates entitlement.")
        var frequentUpdates: Bool?

        @Option(
            name: .customLong("push-to-start-budget"),
            help: "Remote starts per device per hour (default 10)."
        )
        var pushToStartBudgetPerHour: Int?

        @Option(
            name: .customLong("widget-reload-interval"),
            help: "At most one widget reload per device in this many seconds (default 1800; 0 for no pacing)."
        )
        var widgetReloadIntervalSeconds: Int?

        @Option(
            name: .customLong("control-reload-interval"),
            help: "At most one reload of a control per device in this many seconds (default 0: no pacing)."
        )
        var controlReloadIntervalSeconds: Int?

        func applied(to current: AppSettings) throws -> AppSettings {
            var settings = current
            settings.bundleID = bundleID ?? settings.bundleID
            settings.maxOpen = maxOpen ?? settings.maxOpen
            if let maxOpenPerDevice { settings.maxOpenPerDevice = maxOpenPerDevice == 0 ? nil : maxOpenPerDevice }
            settings.priorityBudgetPerHour = priorityBudgetPerHour ?? settings.priorityBudgetPerHour
            settings.frequentUpdates = frequentUpdates ?? settings.frequentUpdates
            settings.pushToStartBudgetPerHour = pushToStartBudgetPerHour ?? settings.pushToStartBudgetPerHour
            settings.widgetReloadIntervalSeconds = widgetReloadIntervalSeconds ?? settings.widgetReloadIntervalSeconds
            settings.controlReloadIntervalSeconds =
                controlReloadIntervalSeconds ?? settings.controlReloadIntervalSeconds
            do {
                return try settings.validated()
            } catch {
                throw ValidationError(error.description)
            }
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create an app and print its first key (shown once).")

        @OptionGroup var app: AppArgument
        @OptionGroup var settings: SettingsOptions
        @OptionGroup var options: ConfigurationOptions

        func run() async throws {
            let app = app.id
            try await runningOnStore(options) { store in
                let settings = try settings.applied(to: AppSettings(bundleID: settings.bundleID ?? app.rawValue))
                do {
                    try await store.createApp(app, settings, by: .commandLine)
                } catch EventStoreError.appExists {
                    throw ConfigurationError("an app \(app) already exists")
                }
                let key = try await store.issueKey(for: app, by: .commandLine)
                print(describe(try await summary(app, store)))
                print(describe(key))
                print("(the key is shown only now; Liveline keeps its SHA-256)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the apps with their caps and open counts.")

        @OptionGroup var options: ConfigurationOptions

        func run() async throws {
            try await runningOnStore(options) { store in
                for summary in try await store.apps() { print(describe(summary)) }
            }
        }
    }

    struct Change: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Change an app's caps and budget."
        )

        @OptionGroup var app: AppArgument
        @OptionGroup var settings: SettingsOptions
        @OptionGroup var options: ConfigurationOptions

        func run() async throws {
            let app = app.id
            try await runningOnStore(options) { store in
                let current = try await summary(app, store)
                try await store.updateApp(app, try settings.applied(to: current.settings), by: .commandLine)
                print(describe(try await summary(app, store)))
            }
        }
    }

    struct IssueKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "issue-key",
            abstract: "Issue another key for an app (to rotate: issue, deploy, then revoke the old one)."
        )

        @OptionGroup var app: AppArgument
        @OptionGroup var options: ConfigurationOptions

        func run() async throws {
            let app = app.id
            try await runningOnStore(options) { store in
                do {
                    print(describe(try await store.issueKey(for: app, by: .commandLine)))
                } catch EventStoreError.unknownApp {
                    throw ConfigurationError("no app \(app)")
                }
            }
        }
    }

    struct RevokeKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "revoke-key", abstract: "Revoke a key of an app.")

        @OptionGroup var app: AppArgument
        @Argument(help: "The key id printed when the key was issued.") var keyID: String
        @OptionGroup var options: ConfigurationOptions

        func validate() throws {
            guard UUID(uuidString: keyID) != nil else { throw ValidationError("\(keyID) is not a key id") }
        }

        func run() async throws {
            let (app, keyID) = (app.id, UUID(uuidString: keyID)!)
            try await runningOnStore(options) { store in
                guard try await store.revokeKey(keyID, of: app, by: .commandLine) else {
                    throw ConfigurationError("app \(app) has no key \(keyID.uuidString.lowercased())")
                }
                print("revoked; servers stop accepting it within 5 seconds")
            }
        }
    }

    struct GlobalCap: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "global-cap",
            abstract: "Set the cap on open activities of all apps together."
        )

        @Argument var limit: Int
        @OptionGroup var options: ConfigurationOptions

        func validate() throws {
            do {
                try AppSettings.check(limit, field: "the global cap", minimum: 0)
            } catch {
                throw ValidationError(error.description)
            }
        }

        func run() async throws {
            try await runningOnStore(options) { store in
                try await store.setGlobalMaxOpen(limit, by: .commandLine)
                print("global cap on open activities: \(limit)")
            }
        }
    }
}

extension Apps {
    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the audit trail of administrative changes, newest first: who changed what, when.",
            discussion: "With an app id: that app's changes and the service-wide ones."
        )

        @Argument(help: "Only this app's changes (and the service-wide ones).") var app: String?
        @Option(help: "How many changes to show.") var limit = 50
        @Flag(help: "Print JSON instead of lines.") var json = false
        @OptionGroup var options: ConfigurationOptions

        func validate() throws {
            if let app, AppID(rawValue: app) == nil {
                throw ValidationError("the app id must be \(IdentifierRules.requirement)")
            }
            guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be between 1 and 10000") }
        }

        func run() async throws {
            try await runningOnStore(options) { store in
                let changes = try await store.adminChanges(of: app.flatMap(AppID.init(rawValue:)), limit: limit)
                if json {
                    print(try prettyJSON(changes))
                } else {
                    for change in changes {
                        print(
                            "\(change.occurredAt)  \(change.actor)  \(change.action)  \(change.app?.rawValue ?? "-")  "
                                + String(
                                    decoding: change.details.canonicalJSON,
                                    as: UTF8.self
                                )
                        )
                    }
                }
            }
        }
    }
}

private func summary(_ app: AppID, _ store: EventStore) async throws -> AppSummary {
    guard let summary = try await store.app(app) else { throw ConfigurationError("no app \(app)") }
    return summary
}

private func describe(_ summary: AppSummary) -> String {
    let settings = summary.settings
    return "\(summary.app)  bundle \(settings.bundleID)  open \(summary.openActivities)/\(settings.maxOpen)"
        + "  per device \(settings.maxOpenPerDevice.map(String.init) ?? "-")"
        + "  budget \(settings.priorityBudgetPerHour)/h\(settings.frequentUpdates ? " (frequent updates)" : "")"
        + "  push-to-start \(settings.pushToStartBudgetPerHour)/h/device"
        + "  reloads widgets \(settings.widgetReloadIntervalSeconds)s controls \(settings.controlReloadIntervalSeconds)s"
}

private func describe(_ key: IssuedAPIKey) -> String {
    "key \(key.keyID.uuidString.lowercased()): \(key.secret)"
}

public import ActivityLifecycle
import Postgres

/// An app's settings: its caps, its update budget, its push-to-start budget and how its widget
/// and control reloads are paced.
public struct AppSettings: Hashable, Sendable {
    public var bundleID: String
    public var maxOpen: Int
    public var maxOpenPerDevice: Int?
    public var priorityBudgetPerHour: Int
    public var frequentUpdates: Bool
    /// Remote starts per device in any rolling hour.
    public var pushToStartBudgetPerHour: Int
    /// At most one widget reload per device in this many seconds (0: no pacing).
    public var widgetReloadIntervalSeconds: Int
    /// At most one reload of a control per device in this many seconds (0: no pacing).
    public var controlReloadIntervalSeconds: Int

    public init(
        bundleID: String,
        maxOpen: Int = LifecyclePolicy.standard.defaultMaxOpen,
        maxOpenPerDevice: Int? = nil,
        priorityBudgetPerHour: Int = LifecyclePolicy.standard.defaultPriorityBudgetPerHour,
        frequentUpdates: Bool = false,
        pushToStartBudgetPerHour: Int = LifecyclePolicy.standard.defaultPushToStartBudgetPerHour,
        widgetReloadIntervalSeconds: Int = LifecyclePolicy.standard.defaultWidgetReloadIntervalSeconds,
        controlReloadIntervalSeconds: Int = 0
    ) {
        self.bundleID = bundleID
        self.maxOpen = maxOpen
        self.maxOpenPerDevice = maxOpenPerDevice
        self.priorityBudgetPerHour = priorityBudgetPerHour
        self.frequentUpdates = frequentUpdates
        self.pushToStartBudgetPerHour = pushToStartBudgetPerHour
        self.widgetReloadIntervalSeconds = widgetReloadIntervalSeconds
        self.controlReloadIntervalSeconds = controlReloadIntervalSeconds
    }
}

/// A setting outside what an app may have; `field` names it as the API does (`maxOpen`).
public struct InvalidAppSettings: Error, Hashable, Sendable, CustomStringConvertible {
    public let field: String
    public let reason: String

    public var description: String { "\(field) \(reason)" }
}

extension AppSettings {
    /// The largest count a cap or budget may have: the database keeps them in 32 bits.
    public static let maximumCount = Int(Int32.max)
    /// The longest reload interval, in seconds: a day.
    public static let maximumReloadInterval = 86_400

    /// Checks the rules every app's settings follow, whoever sets them (the admin API or
    /// `liveline apps`).
    public func validated() throws(InvalidAppSettings) -> AppSettings {
        guard Self.isBundleID(bundleID) else {
            throw InvalidAppSettings(
                field: "bundleId",
                reason: "must be 1–255 characters of A-Z a-z 0-9 . - (as Apple allows)"
            )
        }
        try Self.check(maxOpen, field: "maxOpen", minimum: 0)
        if let maxOpenPerDevice { try Self.check(maxOpenPerDevice, field: "maxOpenPerDevice", minimum: 1) }
        try Self.check(priorityBudgetPerHour, field: "priorityBudgetPerHour", minimum: 0)
        try Self.check(pushToStartBudgetPerHour, field: "pushToStartBudgetPerHour", minimum: 1)
        for (interval, field) in [
            (widgetReloadIntervalSeconds, "widgetReloadIntervalSeconds"),
            (controlReloadIntervalSeconds, "controlReloadIntervalSeconds"),
        ] where !(0...Self.maximumReloadInterval).contains(interval) {
            throw InvalidAppSettings(
                field: field,
                reason: "must be between 0 and \(Self.maximumReloadInterval) (a day)"
            )
        }
        return self
    }

    /// Whether `text` is a bundle id as Apple allows one: 1–255 characters of `A-Z a-z 0-9 . -`.
    public static func isBundleID(_ text: String) -> Bool {
        (1...255).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"):
                    true
                default: false
                }
            }
    }

    /// Checks a count setting: between `minimum` and `maximumCount`.
    public static func check(_ value: Int, field: String, minimum: Int) throws(InvalidAppSettings) {
        guard value >= minimum, value <= maximumCount else {
            throw InvalidAppSettings(field: field, reason: "must be between \(minimum) and \(maximumCount)")
        }
    }
}

extension EventStore {
    /// Creates an app with its settings (and its open count, at zero).
    /// - Throws: `EventStoreError.appExists` when the id is taken.
    public func createApp(_ app: AppID, _ settings: AppSettings, by actor: AdminActor) async throws {
        try await administering(actor) { connection in
            do {
                try AppQueries.createApp(app, settings, connection)
            } catch let error as PostgresError where error.isUniqueViolation {
                throw EventStoreError.appExists(app)
            }
        }
    }

    /// Changes an app's caps and budget. Lowering a cap below the open count refuses new
    /// activities until the count is below the new cap; it never closes any.
    public func updateApp(_ app: AppID, _ settings: AppSettings, by actor: AdminActor) async throws {
        let updated = try await administering(actor) { try AppQueries.updateApp(app, settings, $0) }
        guard updated else { throw EventStoreError.unknownApp(app) }
    }

    public func appSettings(_ app: AppID) async throws -> AppSettings? {
        try await withConnection { try AppQueries.appSettings(app, $0) }
    }

    /// Sets the service-wide cap on open activities, spreading it over the global count's stripes.
    public func setGlobalMaxOpen(_ limit: Int, by actor: AdminActor) async throws {
        precondition(limit >= 0 && limit <= Int(Int32.max), "the global cap must fit a 32-bit count")
        try await administering(actor) { try AppQueries.setGlobalMaxOpen(limit, $0) }
    }

    /// The open counts as kept by the caps: per app, and the global total.
    public func openCounts(of app: AppID) async throws -> (app: Int, global: Int) {
        try await withConnection { try AppQueries.openCounts(of: app, $0) }
    }
}

/// An app as the admin API shows it: its settings and how many of its activities are open.
public struct AppSummary: Hashable, Sendable {
    public let app: AppID
    public let settings: AppSettings
    public let openActivities: Int
}

extension EventStore {
    /// Every app, by id.
    public func apps() async throws -> [AppSummary] {
        try await withConnection { try AppQueries.apps(only: nil, $0) }
    }

    /// One app, or `nil`.
    public func app(_ app: AppID) async throws -> AppSummary? {
        try await withConnection { try AppQueries.apps(only: app, $0).first }
    }
}

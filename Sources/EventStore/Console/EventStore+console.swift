public import ActivityLifecycle
public import CanonicalJSON

/// A device an app knows of, found by a console search.
public struct DeviceMatch: Hashable, Sendable {
    public let app: AppID
    public let device: DeviceID
}

/// What a console search found: activities (by their id or their push token's beginning) and
/// devices (by their id, or the beginning of a token they registered).
public struct ConsoleSearchResults: Sendable {
    public let activities: [StoredActivity]
    public let devices: [DeviceMatch]
}

/// A remote start to one of a device's push-to-start tokens, and its verdict once settled.
public struct RecordedStart: Hashable, Sendable {
    public let activity: ActivityID
    public let activityType: String
    public let token: String
    public let acceptedAt: Timestamp
    /// `nil` while the start confirmation window runs.
    public let verdict: StartVerdict?
}

/// What the console's device page shows: the device's activities (newest first), its tokens, the
/// remote starts to it and what it was sent lately.
public struct DeviceOverview: Sendable {
    public let activities: [StoredActivity]
    public let pushToStartTokens: [PushToStartToken]
    public let reloadTokens: [ReloadToken]
    public let starts: [RecordedStart]
    public let pushes: [DevicePush]

    public var isEmpty: Bool {
        activities.isEmpty && pushToStartTokens.isEmpty && reloadTokens.isEmpty && pushes.isEmpty
    }
}

/// How an app's delivery stands, for the console's health page.
public struct AppHealth: Sendable {
    public let settings: AppSettings
    public let openActivities: Int
    public let openInService: Int
    public let serviceMaxOpen: Int
    /// The devices with the most open activities, most first (at most five).
    public let busiestDevices: [(device: DeviceID, open: Int)]
    /// Attempts of the last hour by outcome (`delivered`, `retrying`, …).
    public let deliveriesLastHour: [String: Int]
    /// The app's credentials, and the latest suspension of delivery (current when it names
    /// those credentials).
    public let credentials: APNsCredentialSummary?
    public let suspension: Suspension?
    /// Pushes held while delivery is suspended.
    public let heldPushes: Int
    /// Remote starts waiting for their confirmation window to run out, and the verdicts of
    /// the last day.
    public let startsWaiting: Int
    public let startVerdictsLastDay: [StartVerdict: Int]

    public struct Suspension: Sendable {
        public let status: Int
        public let reason: String
        public let suspendedAt: Timestamp
        /// It names the credentials the app has now: delivery is suspended.
        public let isCurrent: Bool
    }
}

extension EventStore {
    /// How many activities and devices a console search shows at most.
    public static let consoleSearchLimit = 50

    /// Searches `apps` for `text`: an activity id, a device id, or the beginning of a token
    /// (eight hexadecimal digits at least, in any case) — of an activity's push token, a
    /// push-to-start token or a widget or control token.
    public func search(_ text: String, in apps: [AppID]) async throws -> ConsoleSearchResults {
        let activity = ActivityID(rawValue: text)
        let device = DeviceID(rawValue: text)
        let prefix = ConsoleQueries.tokenPrefix(text)
        return try await withConnection { connection in
            var activities = try activity.map { try ConsoleQueries.activities(withID: $0, in: apps, connection) } ?? []
            var devices = try device.map { try ConsoleQueries.devices(withID: $0, in: apps, connection) } ?? []
            if let prefix {
                activities += try ConsoleQueries.activities(withTokenPrefix: prefix, in: apps, connection)
                devices += try ConsoleQueries.devices(withTokenPrefix: prefix, in: apps, connection)
            }
            var seenActivities = Set<StreamID>()
            var seenDevices = Set<DeviceMatch>()
            return ConsoleSearchResults(
                activities: Array(
                    activities.filter { seenActivities.insert($0.stream).inserted }.prefix(Self.consoleSearchLimit)
                ),
                devices: Array(devices.filter { seenDevices.insert($0).inserted }.prefix(Self.consoleSearchLimit))
            )
        }
    }

    /// A device of `app`: its activities, tokens, remote starts and latest pushes (at most `limit`
    /// of each list).
    public func deviceOverview(_ device: DeviceID, of app: AppID, limit: Int = 50) async throws -> DeviceOverview {
        let (activities, startTypes, reloadKinds, starts) = try await withConnection { connection in
            (
                try ConsoleQueries.activities(of: device, in: app, limit: limit, connection),
                try ConsoleQueries.pushToStartTypes(of: device, in: app, connection),
                try ConsoleQueries.reloadKinds(of: device, in: app, connection),
                try ConsoleQueries.starts(to: device, of: app, limit: limit, connection)
            )
        }
        var pushToStartTokens: [PushToStartToken] = []
        for type in startTypes {
            if let token = try await pushToStartToken(of: PushToStartSlot(app: app, device: device, activityType: type))
            {
                pushToStartTokens.append(token)
            }
        }
        var reloadTokens: [ReloadToken] = []
        for kind in reloadKinds {
            if let token = try await reloadToken(of: ReloadTokenSlot(app: app, device: device, kind: kind)) {
                reloadTokens.append(token)
            }
        }
        return DeviceOverview(
            activities: activities,
            pushToStartTokens: pushToStartTokens,
            reloadTokens: reloadTokens,
            starts: starts,
            pushes: try await pushes(to: device, of: app, limit: limit)
        )
    }

    /// How `app`'s activities and delivery stand now; `nil` when there is no such app.
    public func health(of app: AppID) async throws -> AppHealth? {
        try await withConnection { try ConsoleQueries.health(of: app, $0) }
    }
}

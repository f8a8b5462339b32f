import ActivityLifecycle
import CanonicalJSON
import EventLogTools
import EventStore

// What the templates show, in text: each page's context. Mustache escapes every value as it
// writes it into the page.

/// Who is signed in, for the page's header.
struct ViewerView {
    let name: String
    let isAdmin: Bool
    let csrf: String

    init(_ session: ConsoleSession) {
        switch session.viewer {
        case .admin: (name, isAdmin) = ("admin", true)
        case .app(let app): (name, isAdmin) = ("app \(app)", false)
        }
        csrf = session.csrfToken
    }
}

struct SignInPage {
    let title = "Sign in"
    let viewer: ViewerView? = nil
    let problem: String?
}

struct MessagePage {
    let title: String
    let viewer: ViewerView?
    let message: String
}

struct AppsPage {
    let title = "Apps"
    let viewer: ViewerView?
    let apps: [AppRow]

    struct AppRow {
        let id: String
        let bundleID: String
        let open: Int
    }
}

/// An activity in a list: a link to its timeline.
struct ActivityRow {
    let app: String
    let id: String
    let type: String
    let state: String
    let device: String?
    let requestedAt: String
    let pushToken: String?

    init(_ stored: StoredActivity) {
        app = stored.stream.app.rawValue
        id = stored.stream.activity.rawValue
        type = stored.activity.activityType
        state = stored.activity.state.rawValue
        device = stored.activity.deviceID?.rawValue
        requestedAt = stored.activity.requestedAt.description
        pushToken = stored.activity.pushToken
    }
}

// Mustache reads stored properties only (through `Mirror`): what a template asks of a context
// is stored in it.

struct SearchPage {
    let title = "Search"
    let viewer: ViewerView?
    let query: String
    let searched: Bool
    let activities: [ActivityRow]
    let devices: [DeviceRow]
    let nothingFound: Bool

    init(viewer: ViewerView?, query: String, searched: Bool, activities: [ActivityRow], devices: [DeviceRow]) {
        self.viewer = viewer
        self.query = query
        self.searched = searched
        self.activities = activities
        self.devices = devices
        nothingFound = searched && activities.isEmpty && devices.isEmpty
    }

    struct DeviceRow {
        let app: String
        let device: String
    }
}

struct ActivityPage {
    let title: String
    let viewer: ViewerView?
    let app: String
    let id: String
    let activity: ActivityRow?
    let archive: String?
    let masked: Bool
    let entries: [EntryView]

    struct EntryView {
        let time: String
        let type: String
        let refused: Bool
        let cause: String?
        let stateBefore: String?
        let stateAfter: String?
        let summary: String
        let data: String
        let problem: String?
        let pushes: [PushView]
        let hasPushes: Bool
        let token: TokenView?
        let reload: String?
        let trace: TraceView?
    }

    struct TokenView {
        let kind: String
        let token: String
        let invalidated: String?
    }

    struct TraceView {
        let id: String
        let url: String?
    }
}

/// One attempt to deliver a push, or a decision not to.
struct PushView {
    let time: String
    let what: String?
    let attempt: Int
    let outcome: String
    let status: String?
    let reason: String?
    let latency: String?
    let apnsID: String?
    let deviceToken: String?

    init(_ delivery: AuditDelivery) {
        time = delivery.attemptedAt.description
        what = delivery.channelId.map { "broadcast on channel \($0)" }
        attempt = delivery.attempt
        outcome = delivery.outcome
        status = delivery.status.map(String.init)
        reason = delivery.reason
        latency = delivery.latencyMs.map(Self.milliseconds)
        apnsID = delivery.apnsId
        deviceToken = delivery.deviceToken
    }

    init(_ push: DevicePush) {
        time = push.attemptedAt.description
        what =
            switch push.source {
            case .activity(let activity, let version): "activity \(activity), event \(version)"
            case .reload(let reload, .widgets): "widget reload \(reload)"
            case .reload(let reload, .control(let kind)): "control reload \(reload) (\(kind))"
            }
        attempt = push.attempt
        outcome = push.outcome
        status = push.status.map(String.init)
        reason = push.reason
        latency = push.latency.map {
            Self.milliseconds(Double($0.components.attoseconds) / 1e15 + Double($0.components.seconds) * 1000)
        }
        apnsID = push.apnsID
        deviceToken = push.deviceToken
    }

    private static func milliseconds(_ value: Double) -> String {
        "\((value * 10).rounded() / 10) ms"
    }
}

struct DevicePage {
    let title: String
    let viewer: ViewerView?
    let app: String
    let device: String
    let activities: [ActivityRow]
    let pushToStartTokens: [StartTokenView]
    let reloadTokens: [ReloadTokenView]
    let starts: [StartView]
    let pushes: [PushView]

    struct StartTokenView {
        let activityType: String
        let token: String?
        let registeredAt: String?
        let unconfirmedInARow: Int
        let suspect: Bool
        let lastChange: String
    }

    struct ReloadTokenView {
        let kind: String
        let token: String?
        let registeredAt: String?
        let lastChange: String
    }

    struct StartView {
        let activity: String
        let activityType: String
        let token: String
        let acceptedAt: String
        let verdict: String
    }
}

struct HealthPage {
    let title: String
    let viewer: ViewerView?
    let app: String
    let bundleID: String
    let caps: [CapView]
    let busiestDevices: [DeviceCount]
    let deliveries: [Count]
    let credentials: String?
    let suspension: String?
    let suspended: Bool
    let heldPushes: Int
    let startsWaiting: Int
    let verdicts: [Count]
    let retention: String?
    let partitions: [PartitionView]

    struct CapView {
        let name: String
        let open: Int
        let cap: String
    }

    struct DeviceCount {
        let device: String
        let open: Int
    }

    struct Count {
        let name: String
        let count: Int
    }

    struct PartitionView {
        let name: String
        let from: String
        let to: String
        let state: String
    }
}

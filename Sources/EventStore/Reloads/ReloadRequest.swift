public import ActivityLifecycle
public import CanonicalJSON

/// What a reload request reloads, and on which devices.
public struct ReloadTarget: Hashable, Sendable {
    public let kind: ReloadKind
    /// For widgets: only devices that listed a widget of one of these kinds; `nil` for every
    /// device with a widget token (a widget push reloads all of the app's widgets on a device).
    public let widgetKinds: [String]?
    /// The devices named; `nil` for every device of the app that has the kind.
    public let devices: [DeviceID]?

    public init(kind: ReloadKind, widgetKinds: [String]? = nil, devices: [DeviceID]? = nil) {
        self.kind = kind
        self.widgetKinds = widgetKinds.map { Array(Set($0)).sorted() }
        self.devices = devices.map { Array(Set($0)).sorted { $0.rawValue < $1.rawValue } }
    }

    /// At most this many devices named in one request; more is a reload of every device, or
    /// several requests.
    public static let maximumDevices = 1000
    /// At most this many widget kinds named in one request.
    public static let maximumWidgetKinds = 100
}

/// Who asked for a reload.
public enum ReloadSource: Hashable, Sendable {
    /// The app backend, through the API; with its `Idempotency-Key`, if it gave one.
    case api(IdempotencyKey?)
    /// An activity's update or end (`version`: its event), which asked that its device reload its
    /// widgets: requested by the delivery worker once the Live Activity push is settled.
    case activity(StreamID, version: Int)
}

/// A widget reload an activity's event asked of its device (`widgetReload` of an update or end):
/// requested by the delivery worker, as a request of its own, once the event's Live Activity push
/// is settled — in the transaction that records the settling, once per event.
public struct ActivityReload: Hashable, Sendable {
    public let stream: StreamID
    public let version: Int
    public let device: DeviceID
    public let widgetKinds: [String]?

    public init(stream: StreamID, version: Int, device: DeviceID, widgetKinds: [String]?) {
        self.stream = stream
        self.version = version
        self.device = device
        self.widgetKinds = widgetKinds
    }

    /// The request it makes: the device's widgets (of those kinds).
    public var target: ReloadTarget { ReloadTarget(kind: .widgets, widgetKinds: widgetKinds, devices: [device]) }
}

/// A reload request, accepted: its id, and how many devices it targeted then.
public struct AcceptedReload: Hashable, Sendable {
    public let id: Int64
    public let app: AppID
    public let target: ReloadTarget
    public let targets: Int
    public let requestedAt: Timestamp
    /// A retry under the same idempotency key: the first request's answer, nothing new.
    public let isReplay: Bool

    public init(id: Int64, app: AppID, target: ReloadTarget, targets: Int, requestedAt: Timestamp, isReplay: Bool) {
        self.id = id
        self.app = app
        self.target = target
        self.targets = targets
        self.requestedAt = requestedAt
        self.isReplay = isReplay
    }
}

/// Where a reload request stands: its devices counted by their latest outcome, and whether its
/// fan-out has reached every device.
public struct ReloadStatus: Hashable, Sendable {
    public let reload: AcceptedReload
    /// The activity whose event (`version`) asked for it, if one did.
    public let activity: ActivityID?
    public let version: Int?
    /// The fan-out reached every device (each was sent the reload, or coalesced).
    public let fannedOut: Bool
    /// Devices by their latest outcome (`delivered`, `coalesced`, `retrying`, `failed`, …).
    public let devices: [String: Int]

    public init(reload: AcceptedReload, activity: ActivityID?, version: Int?, fannedOut: Bool, devices: [String: Int]) {
        self.reload = reload
        self.activity = activity
        self.version = version
        self.fannedOut = fannedOut
        self.devices = devices
    }
}

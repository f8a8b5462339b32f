public import ActivityLifecycle
public import CanonicalJSON
import Postgres

/// What a reload push reloads on a device: every push-enabled widget of the app (one token per
/// device, WidgetKit's `WidgetPushHandler`, iOS 26), or one control (a token per control kind,
/// `ControlPushHandler`, iOS 18).
public enum ReloadKind: Hashable, Sendable {
    case widgets
    case control(String)

    /// `apns-push-type`, and the topic's suffix after `.push-type.`.
    public var pushType: String {
        switch self {
        case .widgets: "widgets"
        case .control: "controls"
        }
    }

    /// The control's kind; empty for widgets (`reload_tokens.control_kind`).
    public var controlKind: String {
        switch self {
        case .widgets: ""
        case .control(let kind): kind
        }
    }

    /// The kind stored as `push_type` and `control_kind`.
    init?(pushType: String, controlKind: String) {
        switch (pushType, controlKind) {
        case ("widgets", ""): self = .widgets
        case ("controls", let kind) where !kind.isEmpty: self = .control(kind)
        default: return nil
        }
    }
}

/// Where a widget or control token belongs: a device of an app's user, and what it reloads.
public struct ReloadTokenSlot: Hashable, Sendable {
    public let app: AppID
    public let device: DeviceID
    public let kind: ReloadKind

    public init(app: AppID, device: DeviceID, kind: ReloadKind) {
        self.app = app
        self.device = device
        self.kind = kind
    }
}

/// A push-enabled widget the system listed with the device's widget token (`WidgetInfo`): its
/// kind (the `kind` string of its configuration) and family (`systemSmall`, `accessoryInline`, …).
public struct WidgetInfo: Hashable, Sendable, Comparable {
    public let kind: String
    public let family: String

    public init(kind: String, family: String) {
        self.kind = kind
        self.family = family
    }

    public static func < (lhs: WidgetInfo, rhs: WidgetInfo) -> Bool {
        (lhs.kind, lhs.family) < (rhs.kind, rhs.family)
    }

    /// A list as it is stored: sorted, each widget once, so that a report of the same widgets in
    /// another order changes nothing.
    public static func canonical(_ widgets: [WidgetInfo]) -> [WidgetInfo] {
        Array(Set(widgets)).sorted()
    }

    /// The list as `reload_token_changes.widgets` holds it.
    static func json(_ widgets: [WidgetInfo]) -> JSONB {
        JSONB(
            utf8: JSONValue.array(
                widgets.map { .object(["kind": .string($0.kind), "family": .string($0.family)]) }
            ).canonicalJSON
        )
    }

    /// The list `json` wrote.
    static func list(_ json: JSONB) throws -> [WidgetInfo] {
        guard case .array(let items) = try? JSONParser.parse(json.utf8) else {
            throw EventStoreError.unreadableRow("reload_token_changes: widgets \(json.text)")
        }
        return try items.map { item in
            guard case .object(let members) = item, case .string(let kind) = members["kind"],
                case .string(let family) = members["family"]
            else { throw EventStoreError.unreadableRow("reload_token_changes: a widget \(json.text)") }
            return WidgetInfo(kind: kind, family: family)
        }
    }
}

/// A slot's widget or control token as it stands, with the changes that led there, oldest first.
public struct ReloadToken: Hashable, Sendable {
    public struct Registration: Hashable, Sendable {
        public let token: String
        /// The widgets listed with it (empty for a control's token).
        public let widgets: [WidgetInfo]
        public let registeredAt: Timestamp

        public init(token: String, widgets: [WidgetInfo], registeredAt: Timestamp) {
            self.token = token
            self.widgets = widgets
            self.registeredAt = registeredAt
        }
    }

    public let slot: ReloadTokenSlot
    /// The token reloads go to now; `nil` after a removal or an invalidation.
    public let current: Registration?
    public let changes: [TokenChange]

    public init(slot: ReloadTokenSlot, current: Registration?, changes: [TokenChange]) {
        self.slot = slot
        self.current = current
        self.changes = changes
    }
}

public import CanonicalJSON

/// One fact in an activity's stream.
public struct ActivityEvent: Hashable, Sendable {
    /// Position in the stream: 1, 2, 3, … without gaps.
    public var version: Int
    /// The command's logical time: the server's time for app and device commands, the due time
    /// for time-driven transitions.
    public var occurredAt: Timestamp
    public var cause: Cause
    public var payload: EventPayload

    public init(version: Int, occurredAt: Timestamp, cause: Cause, payload: EventPayload) {
        self.version = version
        self.occurredAt = occurredAt
        self.cause = cause
        self.payload = payload
    }

    /// The event type stored in the log (`activity.requested`, …).
    public var type: EventType { payload.type }

    /// The widget reload the event asks of the activity's device, if any.
    public var widgetReload: WidgetReload? {
        switch payload {
        case .updated(let updated): updated.widgetReload
        case .ended(let ended): ended.widgetReload
        default: nil
        }
    }
}

/// The event types of the log. Their names are a public interface for dashboards.
public enum EventType: String, Hashable, Sendable, Codable, CaseIterable {
    case requested = "activity.requested"
    case started = "activity.started"
    case updated = "activity.updated"
    case becameStale = "activity.became_stale"
    case ended = "activity.ended"
    case dismissed = "activity.dismissed"
    case pushTokenChanged = "activity.push_token_changed"
    case startUnconfirmed = "activity.start_unconfirmed"
}

/// What an event records, by type.
public enum EventPayload: Hashable, Sendable {
    case requested(Requested)
    case started
    case updated(Updated)
    case becameStale
    case ended(Ended)
    case dismissed(Dismissed)
    case pushTokenChanged(PushTokenChanged)
    /// A remote start brought no push token within the window; the state does not change.
    case startUnconfirmed(UnconfirmedStart)

    public var type: EventType {
        switch self {
        case .requested: .requested
        case .started: .started
        case .updated: .updated
        case .becameStale: .becameStale
        case .ended: .ended
        case .dismissed: .dismissed
        case .pushTokenChanged: .pushTokenChanged
        case .startUnconfirmed: .startUnconfirmed
        }
    }

    /// The activity was created: `pending` when `startDate` is after the event, else `active`.
    public struct Requested: Hashable, Sendable {
        public var activityType: String
        public var attributes: JSONObject
        public var content: ActivityContent
        public var startDate: Timestamp?
        public var pushType: PushType?
        public var style: ActivityStyle?
        public var deviceID: DeviceID?
        public var timestamp: Timestamp?
        public var remoteStart: RemoteStart?
        public var channel: BroadcastChannel?

        public init(_ request: Command.Request) {
            activityType = request.activityType
            attributes = request.attributes
            content = request.content
            startDate = request.startDate
            pushType = request.pushType
            style = request.style
            deviceID = request.deviceID
            timestamp = request.timestamp
            remoteStart = request.remoteStart
            channel = request.channel
        }
    }

    /// New content, with the priority it was sent at.
    public struct Updated: Hashable, Sendable {
        public var content: ActivityContent
        public var alert: Alert?
        /// The priority the update is sent at.
        public var priority: Priority
        /// Sent without an explicit priority when the budget was spent: lowered from 10 to 5.
        public var downgraded: Bool
        public var timestamp: Timestamp?
        /// The device's widgets are reloaded once the push is settled.
        public var widgetReload: WidgetReload?

        public init(
            content: ActivityContent,
            alert: Alert?,
            priority: Priority,
            downgraded: Bool,
            timestamp: Timestamp?,
            widgetReload: WidgetReload? = nil
        ) {
            self.content = content
            self.alert = alert
            self.priority = priority
            self.downgraded = downgraded
            self.timestamp = timestamp
            self.widgetReload = widgetReload
        }
    }

    /// The activity ended; it leaves the screen at `dismissalDate`.
    public struct Ended: Hashable, Sendable {
        public var reason: EndReason
        /// Final content, when the end carried some.
        public var content: ActivityContent?
        /// The policy as asked: `immediate`, `default` or `after`.
        public var dismissalPolicy: DismissalPolicyName
        /// When it will be dismissed: the end itself for `immediate`, else the clamped date.
        public var dismissalDate: Timestamp
        public var timestamp: Timestamp?
        /// The device's widgets are reloaded once the push is settled.
        public var widgetReload: WidgetReload?

        public init(
            reason: EndReason,
            content: ActivityContent?,
            dismissalPolicy: DismissalPolicyName,
            dismissalDate: Timestamp,
            timestamp: Timestamp?,
            widgetReload: WidgetReload? = nil
        ) {
            self.reason = reason
            self.content = content
            self.dismissalPolicy = dismissalPolicy
            self.dismissalDate = dismissalDate
            self.timestamp = timestamp
            self.widgetReload = widgetReload
        }
    }

    public struct Dismissed: Hashable, Sendable {
        public var reason: DismissalReason

        public init(reason: DismissalReason) {
            self.reason = reason
        }
    }

    public struct PushTokenChanged: Hashable, Sendable {
        public var pushToken: String

        public init(pushToken: String) {
            self.pushToken = pushToken
        }
    }
}

/// The dismissal policy's name, as recorded in `activity.ended`.
public enum DismissalPolicyName: String, Hashable, Sendable, Codable {
    case immediate
    case `default`
    case after
}

/// Why an activity was dismissed, as recorded in `activity.dismissed`.
public enum DismissalReason: String, Hashable, Sendable, Codable {
    /// The dismissal deadline (policy `default` or `after`) came.
    case deadline
    /// Ended with policy `immediate` (or a dismissal date not after the end), or ended while pending.
    case immediate
    /// The device reported that the person removed it.
    case userRemoved = "user_removed"
}

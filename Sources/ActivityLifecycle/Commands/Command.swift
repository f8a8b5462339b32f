public import CanonicalJSON

/// Something asked of an activity, by the app, its device, or the system (time).
public enum Command: Hashable, Sendable {
    /// The app asks for a new activity.
    case request(Request)
    /// The system starts a scheduled activity at its start date.
    case start
    /// The app updates the content.
    case update(Update)
    /// The system marks the activity stale at its stale date.
    case markStale
    /// The app ends the activity, or the system ends it when its lifetime runs out.
    case end(End)
    /// The system dismisses it when the dismissal deadline comes, or the device reports that the
    /// person removed it.
    case dismiss(DismissalTrigger)
    /// The app (or device) registers or rotates the activity's push token.
    case registerPushToken(String)
    /// The system records that a remote start APNs accepted brought no push token within the
    /// start confirmation window.
    case flagUnconfirmedStart(UnconfirmedStart)

    public struct Request: Hashable, Sendable {
        public var activityType: String
        public var attributes: JSONObject
        public var content: ActivityContent
        /// A future start date schedules the activity (`pending` until then).
        public var startDate: Timestamp?
        public var pushType: PushType?
        public var style: ActivityStyle?
        public var deviceID: DeviceID?
        /// The app's own clock reading, for ordering later updates.
        public var timestamp: Timestamp?
        /// Set when the device is to start the activity on a push (push-to-start), rather than
        /// the app on the device.
        public var remoteStart: RemoteStart?
        /// Set when the activity's pushes go by broadcast on one of the app's channels (iOS 18).
        public var channel: BroadcastChannel?

        public init(
            activityType: String,
            attributes: JSONObject = .empty,
            content: ActivityContent,
            startDate: Timestamp? = nil,
            pushType: PushType? = nil,
            style: ActivityStyle? = nil,
            deviceID: DeviceID? = nil,
            timestamp: Timestamp? = nil,
            remoteStart: RemoteStart? = nil,
            channel: BroadcastChannel? = nil
        ) {
            self.activityType = activityType
            self.attributes = attributes
            self.content = content
            self.startDate = startDate
            self.pushType = pushType
            self.style = style
            self.deviceID = deviceID
            self.timestamp = timestamp
            self.remoteStart = remoteStart
            self.channel = channel
        }
    }

    public struct Update: Hashable, Sendable {
        public var content: ActivityContent
        public var alert: Alert?
        /// `nil` means 10, downgraded to 5 when the update budget is spent.
        public var priority: Priority?
        public var timestamp: Timestamp?
        public var widgetReload: WidgetReload?

        public init(
            content: ActivityContent,
            alert: Alert? = nil,
            priority: Priority? = nil,
            timestamp: Timestamp? = nil,
            widgetReload: WidgetReload? = nil
        ) {
            self.content = content
            self.alert = alert
            self.priority = priority
            self.timestamp = timestamp
            self.widgetReload = widgetReload
        }
    }

    public struct End: Hashable, Sendable {
        /// Final content shown until dismissal; `nil` keeps the current content.
        public var content: ActivityContent?
        public var dismissal: DismissalPolicy
        public var reason: EndReason
        public var timestamp: Timestamp?
        public var widgetReload: WidgetReload?

        public init(
            content: ActivityContent? = nil,
            dismissal: DismissalPolicy = .default,
            reason: EndReason = .app,
            timestamp: Timestamp? = nil,
            widgetReload: WidgetReload? = nil
        ) {
            self.content = content
            self.dismissal = dismissal
            self.reason = reason
            self.timestamp = timestamp
            self.widgetReload = widgetReload
        }
    }

    /// Who sends the command.
    public var cause: Cause {
        switch self {
        case .request, .update, .registerPushToken: .app
        case .start, .markStale, .flagUnconfirmedStart: .system
        case .end(let end): end.reason == .app ? .app : .system
        case .dismiss(let reason): reason == .userRemoved ? .device : .system
        }
    }

    /// A short name for messages and documents.
    public var name: String {
        switch self {
        case .request: "request"
        case .start: "start"
        case .update: "update"
        case .markStale: "mark stale"
        case .end(let end): end.reason == .app ? "end" : "end (lifetime)"
        case .dismiss(let reason): reason == .userRemoved ? "dismiss (device)" : "dismiss (deadline)"
        case .registerPushToken: "register push token"
        case .flagUnconfirmedStart: "flag unconfirmed start"
        }
    }
}

/// Why an activity ended.
public enum EndReason: String, Hashable, Sendable, Codable {
    /// The app ended it.
    case app
    /// It was active or stale for the whole lifetime (8 hours).
    case lifetimeExceeded = "lifetime_exceeded"
}

/// What asks for a dismissal.
public enum DismissalTrigger: String, Hashable, Sendable, Codable {
    /// The dismissal deadline (policy `default` or `after`) came.
    case deadline
    /// The device reported that the person removed it.
    case userRemoved = "user_removed"
}

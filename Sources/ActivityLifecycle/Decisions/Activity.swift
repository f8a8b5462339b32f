public import CanonicalJSON

/// The state of one activity: what folding its stream yields.
public struct Activity: Hashable, Sendable {
    public var state: ActivityState
    /// The version of the last event folded.
    public var version: Int
    public var activityType: String
    public var attributes: JSONObject
    public var content: ActivityContent
    public var startDate: Timestamp?
    public var pushType: PushType?
    public var style: ActivityStyle?
    public var deviceID: DeviceID?
    public var pushToken: String?
    public var requestedAt: Timestamp
    public var activatedAt: Timestamp?
    public var endedAt: Timestamp?
    public var endReason: EndReason?
    public var dismissedAt: Timestamp?
    /// When an ended activity is dismissed.
    public var dismissalDate: Timestamp?
    /// The latest `timestamp` an app command carried; later updates must carry a later one.
    public var lastTimestamp: Timestamp?
    /// When the last event occurred; events never go back in time.
    public var lastEventAt: Timestamp
    /// When the priority-10 updates of the last hour were sent, oldest first.
    public var recentHighPriorityUpdates: [Timestamp]

    /// An activity restored from storage (a projection row). Everything else makes activities
    /// with `Lifecycle.decide` and `evolve`.
    public init(
        state: ActivityState,
        version: Int,
        activityType: String,
        attributes: JSONObject,
        content: ActivityContent,
        startDate: Timestamp?,
        pushType: PushType?,
        style: ActivityStyle?,
        deviceID: DeviceID?,
        pushToken: String?,
        requestedAt: Timestamp,
        activatedAt: Timestamp?,
        endedAt: Timestamp?,
        endReason: EndReason?,
        dismissedAt: Timestamp?,
        dismissalDate: Timestamp?,
        lastTimestamp: Timestamp?,
        lastEventAt: Timestamp,
        recentHighPriorityUpdates: [Timestamp]
    ) {
        self.state = state
        self.version = version
        self.activityType = activityType
        self.attributes = attributes
        self.content = content
        self.startDate = startDate
        self.pushType = pushType
        self.style = style
        self.deviceID = deviceID
        self.pushToken = pushToken
        self.requestedAt = requestedAt
        self.activatedAt = activatedAt
        self.endedAt = endedAt
        self.endReason = endReason
        self.dismissedAt = dismissedAt
        self.dismissalDate = dismissalDate
        self.lastTimestamp = lastTimestamp
        self.lastEventAt = lastEventAt
        self.recentHighPriorityUpdates = recentHighPriorityUpdates
    }

    /// Bytes of `attributes` plus `contentState`, the quantity the payload limit bounds.
    public var payloadSize: Int { attributes.encodedSize + content.contentState.encodedSize }

    /// Whether a push token may be registered: while it is open, and once after it ended if it
    /// never had one (an activity ended before its token arrived — often a remote start's — so
    /// that its end can still reach the device).
    public var acceptsPushToken: Bool {
        state.isOpen || (state == .ended && pushToken == nil)
    }

    /// Whether it is a started activity still waiting for the first push token its device is to
    /// report: what a remote start that shows nothing leaves behind.
    public var awaitsFirstPushToken: Bool {
        state != .pending && acceptsPushToken && pushToken == nil && pushType != .channel
    }
}

public import ActivityLifecycle
public import CanonicalJSON

/// Where a push-to-start token belongs: a device of an app's user, for one activity type (the
/// app's `ActivityAttributes` type, as requests name it).
public struct PushToStartSlot: Hashable, Sendable {
    public let app: AppID
    public let device: DeviceID
    public let activityType: String

    public init(app: AppID, device: DeviceID, activityType: String) {
        self.app = app
        self.device = device
        self.activityType = activityType
    }
}

/// A slot's push-to-start token as it stands, with every change that led there, oldest first.
public struct PushToStartToken: Hashable, Sendable {
    public struct Registration: Hashable, Sendable {
        public let token: String
        public let registeredAt: Timestamp
        /// The latest remote starts to it that went unconfirmed in a row (see
        /// `EventStore.settleDueStarts`).
        public let unconfirmedStartsInARow: Int
        /// Whether that run makes it suspect: the app should have the device report its
        /// push-to-start token afresh (docs/delivery.md).
        public let isSuspect: Bool

        public init(token: String, registeredAt: Timestamp, unconfirmedStartsInARow: Int = 0, isSuspect: Bool = false) {
            self.token = token
            self.registeredAt = registeredAt
            self.unconfirmedStartsInARow = unconfirmedStartsInARow
            self.isSuspect = isSuspect
        }
    }

    public let slot: PushToStartSlot
    /// The token a remote start goes to now; `nil` after a removal or an invalidation.
    public let current: Registration?
    public let changes: [TokenChange]

    public init(slot: PushToStartSlot, current: Registration?, changes: [TokenChange]) {
        self.slot = slot
        self.current = current
        self.changes = changes
    }
}

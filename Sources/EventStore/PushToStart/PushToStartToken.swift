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

/// One change of a slot's push-to-start token, as the log of changes keeps it.
public struct PushToStartTokenChange: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// A token given by the app backend: a first one, or a rotation.
        case registered
        /// Removed by the app backend.
        case removed
        /// APNs declared the token dead.
        case invalidated
    }

    public let kind: Kind
    /// The token registered or declared dead; `nil` for a removal.
    public let token: String?
    /// APNs' status and reason, for an invalidation.
    public let status: Int?
    public let reason: String?
    /// Since when APNs holds the token dead, for an invalidation.
    public let invalidSince: Timestamp?
    public let changedAt: Timestamp

    public init(
        kind: Kind,
        token: String?,
        status: Int? = nil,
        reason: String? = nil,
        invalidSince: Timestamp? = nil,
        changedAt: Timestamp
    ) {
        self.kind = kind
        self.token = token
        self.status = status
        self.reason = reason
        self.invalidSince = invalidSince
        self.changedAt = changedAt
    }
}

/// A slot's push-to-start token as it stands, with every change that led there, oldest first.
public struct PushToStartToken: Hashable, Sendable {
    public struct Registration: Hashable, Sendable {
        public let token: String
        public let registeredAt: Timestamp

        public init(token: String, registeredAt: Timestamp) {
            self.token = token
            self.registeredAt = registeredAt
        }
    }

    public let slot: PushToStartSlot
    /// The token a remote start goes to now; `nil` after a removal or an invalidation.
    public let current: Registration?
    public let changes: [PushToStartTokenChange]

    public init(slot: PushToStartSlot, current: Registration?, changes: [PushToStartTokenChange]) {
        self.slot = slot
        self.current = current
        self.changes = changes
    }
}

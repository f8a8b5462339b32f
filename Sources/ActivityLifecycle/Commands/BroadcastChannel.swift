/// A channel of the app's on which APNs broadcasts one push to every device subscribed to it
/// (iOS 18). An activity requested on a channel is updated and ended by broadcast, never through
/// a device's push token.
public struct BroadcastChannel: Hashable, Sendable {
    /// The id APNs gave the channel when it was created (base64).
    public var id: String
    /// What APNs keeps for a device that is offline. `nil` in a request means the app has no
    /// such channel (or deleted it): the request is refused (`channel_not_found`); an accepted
    /// request always has one.
    public var storagePolicy: MessageStoragePolicy?

    public init(id: String, storagePolicy: MessageStoragePolicy?) {
        self.id = id
        self.storagePolicy = storagePolicy
    }
}

/// A channel's message storage policy, fixed when the channel is created.
public enum MessageStoragePolicy: String, Hashable, Sendable, CaseIterable {
    /// APNs stores nothing: a device that is offline misses the push (`apns-expiration` must be 0).
    case none
    /// APNs keeps the most recent push for a device that is offline.
    case mostRecent

    /// Apple's number for it (`message-storage-policy`).
    public var apnsValue: Int {
        switch self {
        case .none: 0
        case .mostRecent: 1
        }
    }

    public init?(apnsValue: Int) {
        guard let policy = Self.allCases.first(where: { $0.apnsValue == apnsValue }) else { return nil }
        self = policy
    }
}

public import ActivityLifecycle
public import CanonicalJSON

/// One of an app's broadcast channels, as Liveline keeps it: created through APNs' channel
/// management API under the app's credentials, and deleted there once.
public struct StoredChannel: Hashable, Sendable {
    public let app: AppID
    /// The id APNs gave it.
    public let id: String
    /// The environment of the credentials it was created with: its broadcasts go there.
    public let environment: APNsEnvironment
    public let storagePolicy: MessageStoragePolicy
    public let createdAt: Timestamp
    /// When it was deleted; a deleted channel takes no new activity.
    public let deletedAt: Timestamp?

    public init(
        app: AppID,
        id: String,
        environment: APNsEnvironment,
        storagePolicy: MessageStoragePolicy,
        createdAt: Timestamp,
        deletedAt: Timestamp?
    ) {
        self.app = app
        self.id = id
        self.environment = environment
        self.storagePolicy = storagePolicy
        self.createdAt = createdAt
        self.deletedAt = deletedAt
    }

    /// Whether `id` can be a channel id as APNs gives them (base64, at most 256 characters).
    public static func isWellFormedID(_ id: String) -> Bool {
        (1...256).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || "+/=_-".utf8.contains(byte)
            }
    }
}

public import ActivityLifecycle
public import CanonicalJSON
public import EventStore

/// The tokens an activity's pushes went to, in the order they came: the push-to-start token
/// that started it (a remote start), then each push token it reported; for each, whether APNs
/// declared it dead, and why; and the broadcast channel its updates go on, for an activity on
/// one. A pure function of the activity's events and the invalidations recorded for them.
public struct TokenLineage: Hashable, Sendable {
    public struct Link: Hashable, Sendable {
        public enum Kind: String, Hashable, Sendable {
            /// The device's push-to-start token its remote start went to.
            case pushToStart = "push_to_start"
            /// A push token of the activity itself.
            case push
        }

        public let kind: Kind
        /// As it was registered.
        public let token: String
        /// The event that brought it: the request, or the token's registration.
        public let version: Int
        public let since: Timestamp
        /// When APNs declared it dead, if it did while it was in use.
        public let invalidation: TokenDeath?
    }

    public let links: [Link]
    /// The channel the activity's updates and end are broadcast on (iOS 18), if it is on one.
    public let channelID: String?

    /// - Parameters:
    ///   - events: the activity's events, in order.
    ///   - deaths: invalidations of its push tokens, and of the push-to-start token its remote
    ///     start went to; each belongs to the first link of its token that it was recorded after.
    public init(events: [ActivityEvent], deaths: [TokenDeath]) {
        var links: [Link] = []
        var channelID: String? = nil
        for event in events {
            if case .requested(let requested) = event.payload { channelID = requested.channel?.id }
            let link: (Link.Kind, String)
            switch event.payload {
            case .requested(let requested):
                guard let token = requested.remoteStart?.pushToStartToken else { continue }
                link = (.pushToStart, token)
            case .pushTokenChanged(let changed):
                link = (.push, changed.pushToken)
            default:
                continue
            }
            let death = deaths.filter {
                $0.token.lowercased() == link.1.lowercased() && $0.recordedAt >= event.occurredAt
            }
            .min { $0.recordedAt < $1.recordedAt }
            links.append(
                Link(kind: link.0, token: link.1, version: event.version, since: event.occurredAt, invalidation: death)
            )
        }
        self.links = links
        self.channelID = channelID
    }
}

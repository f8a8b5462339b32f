public import CanonicalJSON

/// What a sender does with APNs' answer (docs/delivery.md has the table, with each reason).
public enum APNsVerdict: Hashable, Sendable {
    /// APNs took it (200).
    case delivered
    /// Try again after a backoff; `renewToken` when APNs called the provider token expired.
    case retry(renewToken: Bool)
    /// The token no longer reaches the device: nothing more goes to it until a new one is
    /// registered (`since`: when APNs says it stopped being valid).
    case invalidateToken(since: Timestamp?)
    /// The app's credentials or topic are wrong: suspend the app's deliveries, keep its tokens.
    case suspendApp
    /// This push can never be sent as it is (a bug, or a payload APNs refused).
    case fail

    public init(_ response: APNsResponse) {
        guard case .answered(let status, let reason, let since, _) = response else {
            self = .retry(renewToken: false)
            return
        }
        switch (status, reason) {
        case (200, _): self = .delivered
        case (_, let reason?) where Self.channelReasons.contains(reason): self = .fail
        case (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"): self = .invalidateToken(since: nil)
        case (400, "BadTopic"), (400, "TopicDisallowed"), (400, "MissingTopic"): self = .suspendApp
        case (400, "IdleTimeout"): self = .retry(renewToken: false)
        case (403, "ExpiredProviderToken"): self = .retry(renewToken: true)
        case (403, _): self = .suspendApp
        case (410, _): self = .invalidateToken(since: since)
        case (429, _), (500...599, _): self = .retry(renewToken: false)
        default: self = .fail
        }
    }

    /// What APNs says of a broadcast whose channel is gone, malformed, or not enabled for the
    /// app: the broadcast fails, whatever the status (a 403 must not suspend the app's pushes to
    /// devices).
    static let channelReasons: Set<String> = [
        "BadChannelId", "ChannelNotRegistered", "MissingChannelId", "FeatureNotEnabled", "TopicMismatch",
        "BadRequestParams", "CannotCreateChannelConfig",
    ]
}

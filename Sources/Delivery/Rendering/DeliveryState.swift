public import ActivityLifecycle
public import CanonicalJSON

/// An activity as delivery sees it: the lifecycle's state, the version of the event whose
/// content it shows (the request, an update, or an end that carried content), when its current
/// push token was registered, and how the device is to start it when its request asked for a
/// push-to-start.
public struct DeliveryState: Hashable, Sendable {
    public private(set) var activity: Activity
    /// `1` while the content is still the requested one.
    public private(set) var contentVersion: Int
    /// When the current push token was registered (a token APNs declared dead before then was
    /// registered again, so it is alive).
    public private(set) var tokenRegisteredAt: Timestamp?
    /// The position in the log of the event that registered the current push token, when the
    /// events folded came with theirs.
    public private(set) var tokenPosition: Int64?
    /// From the request: the device starts the activity on a push to this token.
    public private(set) var remoteStart: RemoteStart?
    /// From the request: the activity's pushes go by broadcast on this channel.
    public private(set) var channel: BroadcastChannel?
    /// How the activity ended, once it has: what its end push says, also when its token arrives
    /// after the end.
    public private(set) var end: EventPayload.Ended?

    /// The state after folding `event`, at `position` in the log when it is read from there,
    /// onto `state` (`nil` before the first event).
    public init(
        _ state: DeliveryState?,
        folding event: ActivityEvent,
        at position: Int64? = nil,
        by lifecycle: Lifecycle
    ) throws(IllegalEvent) {
        activity = try lifecycle.evolve(state?.activity, with: event)
        tokenRegisteredAt = state?.tokenRegisteredAt
        tokenPosition = state?.tokenPosition
        remoteStart = state?.remoteStart
        channel = state?.channel
        end = state?.end
        if case .ended(let ended) = event.payload { end = ended }
        switch event.payload {
        case .requested(let requested):
            contentVersion = event.version
            remoteStart = requested.remoteStart
            channel = requested.channel
        case .updated:
            contentVersion = event.version
        case .ended(let ended) where ended.content != nil:
            contentVersion = event.version
        case .pushTokenChanged:
            contentVersion = state?.contentVersion ?? event.version
            tokenRegisteredAt = event.occurredAt
            tokenPosition = position
        default:
            contentVersion = state?.contentVersion ?? event.version
        }
    }
}

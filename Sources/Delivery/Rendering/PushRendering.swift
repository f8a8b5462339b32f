/// What delivering one event means for the device.
public enum PushRendering: Hashable, Sendable {
    /// Send this request.
    case push(APNsRequest)
    /// The event asks for a push, but the activity has no push token yet. The newest content is
    /// sent when one is registered.
    case awaitingToken
    /// The device needs nothing from this event.
    case silent(Silence)
    /// The event asks for a push that cannot be sent as it is.
    case undeliverable(Undeliverable)

    /// The request to send, if there is one.
    public var request: APNsRequest? {
        if case .push(let request) = self { request } else { nil }
    }

    /// Why an event sends nothing.
    public enum Silence: String, Hashable, Sendable {
        /// The app started the activity on the device (`activity.requested`, `activity.started`):
        /// the device shows its first content already.
        case startedOnDevice = "started_on_device"
        /// A remote start scheduled for later (`startDate`): the push goes with
        /// `activity.started`.
        case startsAtStartDate = "starts_at_start_date"
        /// The device applies it itself from dates it was sent: stale dates, the lifetime's end,
        /// the dismissal deadline.
        case appliedByDevice = "applied_by_device"
        /// The device reported it (a person removed the activity).
        case reportedByDevice = "reported_by_device"
        /// A new token for an activity whose content never changed after it started: the device
        /// shows that content already.
        case deviceIsCurrent = "device_is_current"
        /// A push token of an activity whose pushes go by broadcast on its channel.
        case broadcastOnChannel = "broadcast_on_channel"
        /// What Liveline observed of the activity's delivery (a remote start left unconfirmed):
        /// nothing changed for the device.
        case observedByLiveline = "observed_by_liveline"
    }

    /// Why a push cannot be sent.
    public enum Undeliverable: Hashable, Sendable {
        /// The rendered body is over what its destination takes (4096 bytes to a device, 5120
        /// to a channel).
        case payloadTooLarge(size: Int, limit: Int)
        /// The push token is not hexadecimal, so it cannot name a device.
        case malformedToken
    }
}

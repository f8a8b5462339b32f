import ActivityLifecycle
import CanonicalJSON
import EventStore

extension DeliveryRecord {
    /// A decision about an event that sends nothing (no token yet, nothing APNs could take).
    init(deciding outcome: Outcome, about stored: StoredEvent, reason: String? = nil, at now: Timestamp) {
        self.init(
            position: stored.position,
            stream: stored.stream,
            version: stored.event.version,
            outcome: outcome,
            reason: reason,
            attemptedAt: now
        )
    }

    /// A decision about a push of a lane that was not (or not again) sent.
    init(
        deciding outcome: Outcome,
        about push: ActivityLane.Push,
        of stream: StreamID,
        reason: String? = nil,
        at now: Timestamp
    ) {
        self.init(
            position: push.position,
            stream: stream,
            version: push.version,
            outcome: outcome,
            attempt: push.attempts,
            apnsID: push.request.apnsID,
            deviceToken: push.request.deviceToken,
            tokenPosition: push.tokenPosition,
            channelID: push.request.channelID,
            priority: push.request.priority,
            reason: reason,
            attemptedAt: now
        )
    }

    /// An attempt: `send` went out `latency` before `now`; APNs' status (if it answered), and its
    /// reason or what happened.
    init(
        attempt send: DeliveryBook.Send,
        _ outcome: Outcome,
        status: Int?,
        reason: String?,
        latency: Duration,
        at now: Timestamp
    ) {
        self.init(
            position: send.position,
            stream: send.stream,
            version: send.version,
            outcome: outcome,
            attempt: send.attempt,
            apnsID: send.request.apnsID,
            deviceToken: send.request.deviceToken,
            tokenPosition: send.tokenPosition,
            channelID: send.request.channelID,
            priority: send.request.priority,
            status: status,
            reason: reason,
            latency: latency,
            attemptedAt: now - latency
        )
    }
}

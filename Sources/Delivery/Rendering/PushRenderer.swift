public import ActivityLifecycle
import CanonicalJSON
import Crypto
public import EventStore

/// Turns an event into the push it asks for: a pure function of the event, the activity it
/// leaves, and the app's topic. No I/O, no clock.
///
/// Which events send (docs/delivery.md):
/// - `activity.requested` with a remote start (or, for a scheduled one, `activity.started`):
///   `event: start` to the device's push-to-start token, with the attributes, the first
///   content, the request's alert, and `input-push-token`;
/// - `activity.updated`: `event: update` with the new content, its alert, and the priority the
///   budget ledger recorded;
/// - `activity.ended` by the app: `event: end` with the final content (or the current one) and
///   the dismissal date its policy implies;
/// - `activity.push_token_changed` after the content changed: the newest content, to the new
///   token, at once (priority 10), so an activity's state reaches a token that arrives late; and
///   after the end (a token that arrived after the activity ended): the end.
///
/// An activity on a channel has its updates and end broadcast on the channel instead (a start
/// still goes to the device's push-to-start token: broadcast cannot start an activity, and
/// subscribes it with `input-push-channel`); its push tokens send nothing.
///
/// Everything else the device knows or does itself.
public struct PushRenderer: Sendable {
    /// For the lifetime and dismissal window, which bound how long APNs keeps a push.
    public let policy: LifecyclePolicy

    public init(policy: LifecyclePolicy) {
        self.policy = policy
    }

    /// The push `event` asks for, sent to the token of the activity it leaves.
    /// - Parameter topic: the app's bundle id with `.push-type.liveactivity`; see `Self.topic(for:)`.
    public func render(_ event: StoredEvent, leaving state: DeliveryState, topic: String) -> PushRendering {
        let activity = state.activity
        let kind: LiveActivityPayload.Kind
        let content: ActivityContent
        var alert: Alert? = nil
        var priority = Priority.high
        var expiration = lifetimeEnd(of: activity)
        var token = activity.pushToken
        switch event.event.payload {
        case .requested, .started:
            guard let remoteStart = state.remoteStart, let pushToStartToken = remoteStart.pushToStartToken else {
                return .silent(.startedOnDevice)
            }
            guard activity.state != .pending else { return .silent(.startsAtStartDate) }
            kind = .start(
                attributesType: activity.activityType,
                attributes: activity.attributes,
                channelID: state.channel?.id
            )
            content = activity.content
            alert = remoteStart.alert
            token = pushToStartToken
        case .becameStale:
            return .silent(.appliedByDevice)
        case .startUnconfirmed:
            return .silent(.observedByLiveline)
        case .dismissed(let dismissed):
            return .silent(dismissed.reason == .userRemoved ? .reportedByDevice : .appliedByDevice)
        case .ended(let ended) where ended.reason == .lifetimeExceeded:
            return .silent(.appliedByDevice)
        case .pushTokenChanged where state.channel != nil:
            return .silent(.broadcastOnChannel)
        case .pushTokenChanged where activity.state == .ended:
            // The activity ended before its token arrived: the end goes to it now.
            guard let ended = state.end, ended.reason != .lifetimeExceeded, let endedAt = activity.endedAt else {
                return .silent(.appliedByDevice)
            }
            kind = .end(dismissalDate: Self.dismissalDate(of: ended, endingAt: endedAt))
            content = activity.content
            expiration = endedAt + policy.dismissalWindow
        case .pushTokenChanged where state.contentVersion == 1:
            return .silent(.deviceIsCurrent)
        case .updated(let updated):
            kind = .update
            content = updated.content
            alert = updated.alert
            priority = updated.priority
        case .ended(let ended):
            kind = .end(dismissalDate: Self.dismissalDate(of: ended, endingAt: event.event.occurredAt))
            content = ended.content ?? activity.content
            expiration = event.event.occurredAt + policy.dismissalWindow
        case .pushTokenChanged:
            kind = .update
            content = activity.content
        }
        let destination: APNsRequest.Destination
        if let channel = state.channel, !kind.startsActivity {
            destination = .channel(id: channel.id, storesMessage: channel.storagePolicy == .mostRecent)
        } else {
            guard let token else { return .awaitingToken }
            guard let deviceToken = Self.normalized(token) else { return .undeliverable(.malformedToken) }
            destination = .device(token: deviceToken)
        }
        let body = LiveActivityPayload(
            kind: kind,
            timestamp: event.event.occurredAt,
            content: content,
            alert: alert
        )
        .json
        let request = APNsRequest(
            destination: destination,
            topic: topic,
            priority: priority,
            expiration: expiration,
            apnsID: Self.apnsID(of: event),
            body: body,
            startsActivity: kind.startsActivity,
            event: kind.event
        )
        guard body.count <= request.maximumBodySize else {
            return .undeliverable(.payloadTooLarge(size: body.count, limit: request.maximumBodySize))
        }
        return .push(request)
    }

    /// The APNs topic of an app's Live Activities.
    public static func topic(for bundleID: String) -> String {
        bundleID + APNsRequest.topicSuffix
    }

    /// An update is useful until the activity's lifetime ends: past it the device has ended it.
    private func lifetimeEnd(of activity: Activity) -> Timestamp {
        (activity.activatedAt ?? activity.startDate ?? activity.requestedAt) + policy.activeLifetime
    }

    /// Immediate (the recorded date is the end itself) → that date, already past when the device
    /// gets it, so it removes the activity at once; `after` → the clamped date; `default` → none,
    /// so the device keeps it for its own window.
    private static func dismissalDate(of ended: EventPayload.Ended, endingAt end: Timestamp) -> Timestamp? {
        ended.dismissalPolicy == .default && ended.dismissalDate != end ? nil : ended.dismissalDate
    }

    /// The token in lowercase, or `nil` when it is not an even number of hex digits.
    static func normalized(_ token: String) -> String? {
        let digits = token.utf8
        guard !digits.isEmpty, digits.count.isMultiple(of: 2), digits.allSatisfy(\.isHexDigit) else { return nil }
        return token.lowercased()
    }

    /// A version 8 UUID from the event's stream and version: every attempt of one push carries
    /// the same id, and no two events share one.
    static func apnsID(of event: StoredEvent) -> String {
        apnsID(
            named: "liveline push \(event.stream.app.rawValue) \(event.stream.activity.rawValue) \(event.event.version)"
        )
    }

    /// A lowercase UUID (version 8) derived from `name`: the same for every attempt of one push.
    static func apnsID(named name: String) -> String {
        var bytes = Array(SHA256.hash(data: Array(name.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let digits = Array("0123456789abcdef".utf8)
        // 8-4-4-4-12 hex digits: a hyphen before bytes 4, 6, 8 and 10.
        return String(unsafeUninitializedCapacity: 36) { text in
            var count = 0
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    text[count] = UInt8(ascii: "-")
                    count += 1
                }
                text[count] = digits[Int(byte >> 4)]
                text[count + 1] = digits[Int(byte & 0x0F)]
                count += 2
            }
            return count
        }
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}

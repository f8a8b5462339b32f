import ActivityLifecycle
import CanonicalJSON
import EventStore

/// A widget or control reload as APNs takes it (docs/delivery.md, "Widgets and controls"): the
/// kind's push type and topic, and a body that says only that the content changed — the
/// extension fetches its own data.
enum ReloadPush {
    static let body = Array(#"{"aps":{"content-changed":true}}"#.utf8)

    /// How long APNs keeps a reload for a device that is offline, and how long Liveline retries
    /// it: the push carries no state, so a late one loses nothing, and one that never goes is
    /// followed by the next.
    static let lifetime: Duration = .seconds(3600)

    /// Widgets at priority 5: WidgetKit reloads on its budget anyway, and a widget is read when
    /// the screen is on, so APNs may deliver it when the device wakes. Controls at 10, as
    /// Apple's sample sends them: a control is what the person is about to tap.
    static func priority(of kind: ReloadKind) -> Priority {
        kind == .widgets ? .low : .high
    }

    static func request(_ send: ReloadSend, bundleID: String, now: Timestamp) -> APNsRequest {
        let pushType: APNsRequest.PushType = send.slot.kind == .widgets ? .widgets : .controls
        return APNsRequest(
            destination: .device(token: send.token.lowercased()),
            pushType: pushType,
            topic: "\(bundleID).push-type.\(pushType.rawValue)",
            priority: priority(of: send.slot.kind),
            expiration: now + lifetime,
            apnsID: PushRenderer.apnsID(
                named: "liveline reload \(send.slot.app) \(send.slot.device) \(send.slot.kind.pushType) "
                    + "\(send.slot.kind.controlKind) \(send.reload)"
            ),
            body: body
        )
    }
}

extension APNsVerdict {
    /// APNs' answer to a widget or control reload. As for a Live Activity push, except that a
    /// topic refused or a token not for the topic fails the reload without judging the token or
    /// the app: on these kinds they most often mean the topic or push type is wrong (the app has
    /// no widget or control push capability, say), which must not stop the app's Live Activities.
    init(reload response: APNsResponse) {
        let verdict = APNsVerdict(response)
        guard case .answered(let status, let reason, _, _) = response else {
            self = verdict
            return
        }
        switch verdict {
        case .invalidateToken where reason == "DeviceTokenNotForTopic": self = .fail
        case .suspendApp where status == 400: self = .fail
        default: self = verdict
        }
    }
}

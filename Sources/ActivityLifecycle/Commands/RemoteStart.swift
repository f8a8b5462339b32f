/// How the device starts an activity that its app did not start itself (push-to-start, iOS
/// 17.2+): APNs brings it `event: start` on the device's push-to-start token for the activity's
/// type, and the device reports the new activity's own push token.
public struct RemoteStart: Hashable, Sendable {
    /// The device's push-to-start token for the activity type when the request was accepted.
    /// `nil` in a request means the device has none: the request is refused
    /// (`push_to_start_token_missing`); an accepted request always names one.
    public var pushToStartToken: String?
    /// What the device shows as the activity starts: Apple requires an alert on a start.
    public var alert: Alert

    public init(pushToStartToken: String?, alert: Alert) {
        self.pushToStartToken = pushToStartToken
        self.alert = alert
    }
}

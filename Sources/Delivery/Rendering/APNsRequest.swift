public import ActivityLifecycle
public import CanonicalJSON

/// One Live Activity push as APNs takes it: `POST /3/device/<token>` with these headers and body.
/// What the client adds is the connection's: the host and the `authorization` provider token.
public struct APNsRequest: Hashable, Sendable {
    /// The device's push token, in lowercase hex.
    public let deviceToken: String
    /// `<bundle id>.push-type.liveactivity`.
    public let topic: String
    /// From the budget ledger: the priority recorded in the update.
    public let priority: Priority
    /// APNs stores the push for an offline device until then, and Liveline retries until then.
    public let expiration: Timestamp
    /// A lowercase UUID that APNs echoes back; the same for every attempt of one push.
    public let apnsID: String
    /// The JSON body (`{"aps": {…}}`), at most `maximumBodySize` bytes.
    public let body: [UInt8]
    /// A push-to-start (`event: start`): `deviceToken` is the device's push-to-start token, and
    /// the push is never sent a second time once APNs may have received it.
    public let startsActivity: Bool

    public init(
        deviceToken: String,
        topic: String,
        priority: Priority,
        expiration: Timestamp,
        apnsID: String,
        body: [UInt8],
        startsActivity: Bool = false
    ) {
        self.deviceToken = deviceToken
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
        self.apnsID = apnsID
        self.body = body
        self.startsActivity = startsActivity
    }

    /// APNs refuses a larger body (`PayloadTooLarge`).
    public static let maximumBodySize = 4096

    public var path: String { "/3/device/\(deviceToken)" }

    /// The request's headers, in the order they are sent, without `authorization`.
    public var headers: [(name: String, value: String)] {
        [
            ("apns-push-type", "liveactivity"),
            ("apns-topic", topic),
            ("apns-priority", String(priority.rawValue)),
            ("apns-expiration", String(expiration.epochSeconds)),
            ("apns-id", apnsID),
        ]
    }
}

extension Timestamp {
    /// Whole seconds since 1970, rounded down: how APNs writes times.
    public var epochSeconds: Int64 {
        let (quotient, remainder) = microsecondsSince1970.quotientAndRemainder(dividingBy: 1_000_000)
        return remainder < 0 ? quotient - 1 : quotient
    }
}

public import ActivityLifecycle
public import CanonicalJSON

/// One push as APNs takes it: a Live Activity's to one device (`POST /3/device/<token>`) or
/// broadcast on a channel (`POST /4/broadcasts/apps/<bundle id>`), or a widget or control
/// reload to one device, with these headers and body. What the client adds is the connection's:
/// the host and the `authorization` provider token.
public struct APNsRequest: Hashable, Sendable {
    /// `apns-push-type`, and the suffix of the topic (`<bundle id>.push-type.<kind>`).
    public enum PushType: String, Hashable, Sendable {
        case liveActivity = "liveactivity"
        case widgets
        case controls
    }

    /// Who receives it.
    public enum Destination: Hashable, Sendable {
        /// The device's push token (or push-to-start token), in lowercase hex.
        case device(token: String)
        /// Every device subscribed to the channel. `storesMessage`: the channel's storage
        /// policy keeps the newest push for a device that is offline (`apns-expiration` may then
        /// be later than now; on a channel that stores nothing it must be 0).
        case channel(id: String, storesMessage: Bool)
    }

    public let destination: Destination
    public let pushType: PushType
    /// `<bundle id>.push-type.<push type>`.
    public let topic: String
    /// From the budget ledger: the priority recorded in the update.
    public let priority: Priority
    /// APNs stores the push for an offline device until then, and Liveline retries until then.
    public let expiration: Timestamp
    /// A lowercase UUID that APNs echoes back; the same for every attempt of one push.
    public let apnsID: String
    /// The JSON body (`{"aps": {…}}`), at most `maximumBodySize` bytes.
    public let body: [UInt8]
    /// A push-to-start (`event: start`): the device token is the device's push-to-start token,
    /// and the push is never sent a second time once APNs may have received it.
    public let startsActivity: Bool
    /// A Live Activity push's `event` (`start`, `update`, `end`); `nil` for a reload.
    public let event: String?

    public init(
        destination: Destination,
        pushType: PushType = .liveActivity,
        topic: String,
        priority: Priority,
        expiration: Timestamp,
        apnsID: String,
        body: [UInt8],
        startsActivity: Bool = false,
        event: String? = nil
    ) {
        self.destination = destination
        self.pushType = pushType
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
        self.apnsID = apnsID
        self.body = body
        self.startsActivity = startsActivity
        self.event = event
    }

    /// APNs refuses a larger body to a device (`PayloadTooLarge`).
    public static let maximumBodySize = 4096
    /// APNs refuses a larger broadcast.
    public static let maximumBroadcastBodySize = 5120
    /// What an app's bundle id takes to be its Live Activities' topic.
    public static let topicSuffix = ".push-type.liveactivity"

    /// The device's token, for a push to one device.
    public var deviceToken: String? {
        if case .device(let token) = destination { token } else { nil }
    }

    /// The channel, for a broadcast.
    public var channelID: String? {
        if case .channel(let id, _) = destination { id } else { nil }
    }

    /// The largest body its destination takes.
    public var maximumBodySize: Int {
        channelID == nil ? Self.maximumBodySize : Self.maximumBroadcastBodySize
    }

    var service: APNsService { channelID == nil ? .device : .broadcast }

    /// The app's bundle id: the topic without its suffix (a broadcast names it in its path).
    var bundleID: Substring {
        topic.hasSuffix(Self.topicSuffix) ? topic.dropLast(Self.topicSuffix.count) : Substring(topic)
    }

    public var path: String {
        switch destination {
        case .device(let token): "/3/device/\(token)"
        case .channel: "/4/broadcasts/apps/\(bundleID)"
        }
    }

    /// The request's headers, in the order they are sent, without `authorization`.
    public var headers: [(name: String, value: String)] {
        switch destination {
        case .device:
            [
                ("apns-push-type", pushType.rawValue),
                ("apns-topic", topic),
                ("apns-priority", String(priority.rawValue)),
                ("apns-expiration", String(expiration.epochSeconds)),
                ("apns-id", apnsID),
            ]
        case .channel(let id, let storesMessage):
            [
                ("apns-push-type", "liveactivity"),
                ("apns-channel-id", id),
                ("apns-priority", String(priority.rawValue)),
                ("apns-expiration", storesMessage ? String(expiration.epochSeconds) : "0"),
                ("apns-request-id", apnsID),
            ]
        }
    }
}

extension Timestamp {
    /// Whole seconds since 1970, rounded down: how APNs writes times.
    public var epochSeconds: Int64 {
        let (quotient, remainder) = microsecondsSince1970.quotientAndRemainder(dividingBy: 1_000_000)
        return remainder < 0 ? quotient - 1 : quotient
    }
}

import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventStore
import Testing

/// An activity on a broadcast channel (iOS 18): its updates and end go as one broadcast on the
/// channel; a remote start still goes to the device's push-to-start token and subscribes it.
struct BroadcastRenderingTests {
    static let channelID = "dHN0LXNyY2gtY2hubA=="

    static func onChannel(_ policy: MessageStoragePolicy = .mostRecent, remoteStart: Bool = false) -> Command.Request {
        var request = DeviceStory.request(JSONObject(["score": .string("0-0")]))
        request.pushType = .channel
        request.channel = BroadcastChannel(id: channelID, storagePolicy: policy)
        if remoteStart {
            request.deviceID = DeviceID(rawValue: "phone-1")
            request.remoteStart = RemoteStart(
                pushToStartToken: PushRendererTests.startToken,
                alert: Alert(title: "Kick-off", body: "Lions v Bears")
            )
        }
        return request
    }

    static let goal = Command.update(
        .init(content: ActivityContent(contentState: JSONObject(["score": .string("1-0")])))
    )

    @Test func anUpdateIsOneBroadcastOnTheChannelWithoutAToken() throws {
        var story = DeviceStory()
        #expect(try story.last(.request(Self.onChannel())) == .silent(.startedOnDevice))
        let broadcast = try #require(try story.last(Self.goal).request)
        #expect(broadcast.path == "/4/broadcasts/apps/com.example.game")
        #expect(broadcast.channelID == Self.channelID && broadcast.deviceToken == nil)
        #expect(
            broadcast.headers.map(\.name)
                == ["apns-push-type", "apns-channel-id", "apns-priority", "apns-expiration", "apns-request-id"]
        )
        #expect(broadcast.headers.first { $0.name == "apns-channel-id" }?.value == Self.channelID)
        // Kept for a device that is offline until the activity's lifetime ends.
        let expiration = DeviceStory.start + LifecyclePolicy.standard.activeLifetime
        #expect(broadcast.headers.first { $0.name == "apns-expiration" }?.value == String(expiration.epochSeconds))
        #expect(
            try JSONParser.parse(broadcast.body)
                == json(#"{"aps": {"timestamp": 1685952000, "event": "update", "content-state": {"score": "1-0"}}}"#)
        )
    }

    @Test func aChannelThatStoresNothingTakesBroadcastsThatExpireAtOnce() throws {
        var story = DeviceStory()
        try story.send(.request(Self.onChannel(.none)))
        let broadcast = try #require(try story.last(Self.goal).request)
        #expect(broadcast.headers.first { $0.name == "apns-expiration" }?.value == "0")
        // Liveline still retries it until the activity's lifetime ends.
        #expect(broadcast.expiration == DeviceStory.start + LifecyclePolicy.standard.activeLifetime)
    }

    @Test func theEndIsBroadcastAndPushTokensSendNothing() throws {
        var story = DeviceStory()
        try story.send(.request(Self.onChannel()))
        #expect(try story.last(.registerPushToken(DeviceStory.token)) == .silent(.broadcastOnChannel))
        // The end (then the dismissal, which sends nothing).
        let end = try #require(try story.send(.end(.init(dismissal: .immediate))).first?.request)
        #expect(end.channelID == Self.channelID)
        guard case .object(let root) = try JSONParser.parse(end.body), case .object(let aps)? = root["aps"] else {
            Issue.record("no aps")
            return
        }
        #expect(aps["event"] == .string("end"))
        #expect(aps["dismissal-date"] == .number(JSONNumber(DeviceStory.start.epochSeconds)))
    }

    @Test func aRemoteStartSubscribesTheDevicesActivityAndUpdatesGoOnTheChannelAtOnce() throws {
        var story = DeviceStory()
        let start = try #require(try story.last(.request(Self.onChannel(remoteStart: true))).request)
        #expect(start.path == "/3/device/" + PushRendererTests.startToken && start.startsActivity)
        guard case .object(let root) = try JSONParser.parse(start.body), case .object(let aps)? = root["aps"] else {
            Issue.record("no aps")
            return
        }
        #expect(aps["event"] == .string("start"))
        #expect(aps["input-push-channel"] == .string(Self.channelID))
        #expect(aps["input-push-token"] == nil)
        // No token to wait for: the channel carries the updates.
        #expect(try story.last(Self.goal).request?.channelID == Self.channelID)
    }

    @Test func aBroadcastMayCarryUpTo5120Bytes() throws {
        let bytes = { (count: Int) in JSONObject(["text": .string(String(repeating: "x", count: count))]) }
        var story = DeviceStory()
        try story.send(.request(Self.onChannel()))
        // Over a device push's 4096, within a broadcast's 5120.
        let large = try story.last(.update(.init(content: ActivityContent(contentState: bytes(4080)))))
        #expect((large.request?.body.count ?? 0) > APNsRequest.maximumBodySize)
        // The lifecycle's own limit (attributes and content within 4096 bytes) keeps content from
        // reaching 5120; the renderer still checks the destination's limit.
        #expect(large.request?.maximumBodySize == APNsRequest.maximumBroadcastBodySize)
    }

    @Test(
        "what APNs says of a broadcast's channel fails the broadcast, whatever the status",
        arguments: [
            (400, "BadChannelId"), (400, "ChannelNotRegistered"), (400, "MissingChannelId"), (403, "FeatureNotEnabled"),
            (400, "TopicMismatch"), (400, "BadRequestParams"),
        ]
    )
    func channelReasons(_ status: Int, _ reason: String) {
        let response = APNsResponse.answered(status: status, reason: reason, tokenInvalidSince: nil, apnsID: nil)
        #expect(APNsVerdict(response) == .fail)
    }
}

import ActivityLifecycle
import CanonicalJSON
import Delivery
import Testing

/// Rendering, checked against the payloads in Apple's ActivityKit documentation ("Starting and
/// updating Live Activities with ActivityKit push notifications"), whose examples use the
/// timestamp 1685952000 and the Power Panda adventure.
@Suite struct PushRendererTests {
    static let swordFound = JSONObject([
        "currentHealthLevel": .number(0.941), "eventDescription": .string("Power Panda found a sword!"),
    ])
    static let knockedDown = JSONObject([
        "currentHealthLevel": .number(0.0), "eventDescription": .string("Power Panda has been knocked down!"),
    ])

    struct Example: CustomTestStringConvertible, Sendable {
        let name: String
        let command: Command
        let aps: String
        var testDescription: String { name }
    }

    static let examples: [Example] = [
        Example(
            name: "update",
            command: .update(.init(content: ActivityContent(contentState: swordFound))),
            aps: """
                {"aps": {"timestamp": 1685952000, "event": "update",
                  "content-state": {"currentHealthLevel": 0.941, "eventDescription": "Power Panda found a sword!"}}}
                """
        ),
        Example(
            name: "update with an alert",
            command: .update(
                .init(
                    content: ActivityContent(contentState: swordFound),
                    alert: Alert(title: "Power Panda found a sword!", body: "Check it out!", sound: "chime.aiff")
                )
            ),
            aps: """
                {"aps": {"timestamp": 1685952000, "event": "update",
                  "content-state": {"currentHealthLevel": 0.941, "eventDescription": "Power Panda found a sword!"},
                  "alert": {"title": "Power Panda found a sword!", "body": "Check it out!", "sound": "chime.aiff"}}}
                """
        ),
        Example(
            name: "update with a stale date and a relevance score",
            command: .update(
                .init(
                    content: ActivityContent(
                        contentState: swordFound,
                        staleDate: DeviceStory.start + .seconds(7200),
                        relevanceScore: RelevanceScore(100)
                    )
                )
            ),
            aps: """
                {"aps": {"timestamp": 1685952000, "event": "update",
                  "content-state": {"currentHealthLevel": 0.941, "eventDescription": "Power Panda found a sword!"},
                  "stale-date": 1685959200, "relevance-score": 100.0}}
                """
        ),
        Example(
            name: "end with a dismissal date",
            command: .end(
                .init(
                    content: ActivityContent(contentState: knockedDown),
                    dismissal: .after(DeviceStory.start + .seconds(7200))
                )
            ),
            aps: """
                {"aps": {"timestamp": 1685952000, "event": "end", "dismissal-date": 1685959200,
                  "content-state": {"currentHealthLevel": 0.0, "eventDescription": "Power Panda has been knocked down!"}}}
                """
        ),
    ]

    @Test("Apple's payload examples", arguments: examples)
    func applesExamples(_ example: Example) throws {
        var story = try DeviceStory.withToken()
        let request = try #require(try story.last(example.command).request)
        #expect(try JSONParser.parse(request.body) == json(example.aps))
    }

    @Test func theRequestIsALiveActivityPushToTheActivitysToken() throws {
        var story = try DeviceStory.withToken()
        let push = try #require(
            try story.last(.update(.init(content: ActivityContent(contentState: Self.swordFound)))).request
        )
        #expect(push.path == "/3/device/" + DeviceStory.token)
        #expect(
            push.headers.map(\.name) == ["apns-push-type", "apns-topic", "apns-priority", "apns-expiration", "apns-id"]
        )
        #expect(push.headers.first { $0.name == "apns-push-type" }?.value == "liveactivity")
        #expect(push.headers.first { $0.name == "apns-topic" }?.value == "com.example.game.push-type.liveactivity")
        #expect(PushRenderer.topic(for: "com.example.game") == DeviceStory.topic)
    }

    @Test func anUpdateGoesAtThePriorityTheBudgetLedgerRecorded() throws {
        var story = try DeviceStory.withToken()
        let rules = AppRules(maxOpen: 5, priorityBudgetPerHour: 1)
        let first = try story.send(
            .update(.init(content: ActivityContent(contentState: Self.swordFound))),
            rules: rules
        )
        story.now = story.now + .seconds(1)
        let second = try story.send(
            .update(.init(content: ActivityContent(contentState: Self.knockedDown))),
            rules: rules
        )
        #expect(first.last?.request?.priority == .high)
        #expect(second.last?.request?.priority == .low)
        #expect(second.last?.request?.headers.first { $0.name == "apns-priority" }?.value == "5")
    }

    @Test func anUpdateExpiresWhenTheActivitysLifetimeEnds() throws {
        var story = try DeviceStory.withToken()
        story.now = story.now + .seconds(600)
        let push = try #require(
            try story.last(.update(.init(content: ActivityContent(contentState: Self.swordFound)))).request
        )
        #expect(push.expiration == DeviceStory.start + LifecyclePolicy.standard.activeLifetime)
    }

    @Test func anEndExpiresWhenTheDismissalWindowCloses() throws {
        var story = try DeviceStory.withToken()
        story.now = story.now + .seconds(600)
        let push = try #require(try story.last(.end(.init())).request)
        #expect(push.expiration == story.now + LifecyclePolicy.standard.dismissalWindow)
    }

    @Test(
        "the dismissal date an end sends, by policy",
        arguments: [
            (DismissalPolicy.immediate, 1_685_952_600 as Int64?),
            (.default, nil),
            (.after(DeviceStory.start + .seconds(3600)), 1_685_955_600),
            (.after(DeviceStory.start + .seconds(9 * 3600)), 1_685_952_600 + 4 * 3600),
            (.after(DeviceStory.start), 1_685_952_600),
        ]
    )
    func dismissalDateByPolicy(policy: DismissalPolicy, expected: Int64?) throws {
        var story = try DeviceStory.withToken()
        story.now = story.now + .seconds(600)
        let renderings = try story.send(.end(.init(dismissal: policy)))
        let push = try #require(renderings.first?.request)
        #expect(try aps(push)["dismissal-date"] == expected.map { .number(JSONNumber($0)) })
        #expect(try aps(push)["event"] == .string("end"))
    }

    @Test func endingAScheduledActivityRemovesItAtOnce() throws {
        var story = DeviceStory()
        try story.send(.request(DeviceStory.request(startDate: DeviceStory.start + .seconds(3600))))
        try story.send(.registerPushToken(DeviceStory.token))
        story.now = story.now + .seconds(60)
        let push = try #require(try story.send(.end(.init())).first?.request)
        #expect(try aps(push)["dismissal-date"] == .number(JSONNumber(DeviceStory.start.epochSeconds + 60)))
    }

    @Test func anEndWithoutContentSendsTheCurrentContent() throws {
        var story = try DeviceStory.withToken()
        try story.send(.update(.init(content: ActivityContent(contentState: Self.swordFound))))
        let push = try #require(try story.send(.end(.init())).first?.request)
        #expect(try aps(push)["content-state"] == .object(Self.swordFound.members))
    }

    @Test(
        "events the device applies or knows itself send nothing",
        arguments: [
            ("request", PushRendering.Silence.startedOnDevice),
            ("scheduled start", .startedOnDevice),
            ("stale date", .appliedByDevice),
            ("lifetime end", .appliedByDevice),
            ("dismissal deadline", .appliedByDevice),
            ("immediate dismissal", .appliedByDevice),
            ("removed by the person", .reportedByDevice),
        ]
    )
    func silentEvents(name: String, silence: PushRendering.Silence) throws {
        var story = DeviceStory()
        let renderings: [PushRendering]
        switch name {
        case "request":
            renderings = try story.send(.request(DeviceStory.request()))
        case "scheduled start":
            try story.send(.request(DeviceStory.request(startDate: DeviceStory.start + .seconds(60))))
            story.now = story.now + .seconds(60)
            renderings = try story.send(.start)
        case "stale date":
            try story.send(
                .request(
                    .init(
                        activityType: "A",
                        content: ActivityContent(contentState: .empty, staleDate: DeviceStory.start + .seconds(60))
                    )
                )
            )
            story.now = story.now + .seconds(60)
            renderings = try story.send(.markStale)
        case "lifetime end":
            try story.send(.request(DeviceStory.request()))
            story.now = story.now + LifecyclePolicy.standard.activeLifetime
            renderings = try story.send(.end(.init(reason: .lifetimeExceeded)))
        case "dismissal deadline":
            try story.send(.request(DeviceStory.request()))
            try story.send(.end(.init()))
            story.now = story.now + LifecyclePolicy.standard.dismissalWindow
            renderings = try story.send(.dismiss(.deadline))
        case "immediate dismissal":
            try story.send(.request(DeviceStory.request()))
            renderings = Array(try story.send(.end(.init(dismissal: .immediate))).dropFirst())
        default:
            try story.send(.request(DeviceStory.request()))
            renderings = try story.send(.dismiss(.userRemoved))
        }
        #expect(renderings.last == .silent(silence))
    }

    static let startToken = String(repeating: "cd", count: 40)
    static let startAlert = Alert(title: "Power Panda is on an adventure!", body: "Tap to follow along.")

    static func remoteStart(startDate: Timestamp? = nil) -> Command.Request {
        var request = DeviceStory.request(
            attributes: JSONObject(["currentHealthLevel": .number(100)]),
            swordFound,
            startDate: startDate
        )
        request.remoteStart = RemoteStart(pushToStartToken: startToken.uppercased(), alert: startAlert)
        return request
    }

    @Test func aRemoteStartIsAStartPushToThePushToStartTokenAsksForTheUpdateToken() throws {
        var story = DeviceStory()
        let push = try #require(try story.last(.request(Self.remoteStart())).request)
        #expect(push.path == "/3/device/" + Self.startToken)
        #expect(push.startsActivity && push.priority == .high)
        #expect(
            try JSONParser.parse(push.body)
                == json(
                    """
                    {"aps": {"timestamp": 1685952000, "event": "start",
                      "attributes-type": "AdventureAttributes", "attributes": {"currentHealthLevel": 100},
                      "input-push-token": 1,
                      "content-state": {"currentHealthLevel": 0.941, "eventDescription": "Power Panda found a sword!"},
                      "alert": {"title": "Power Panda is on an adventure!", "body": "Tap to follow along."}}}
                    """
                )
        )
        // Updates before the device reports the activity's token wait for it, then the newest goes.
        #expect(
            try story.last(.update(.init(content: ActivityContent(contentState: Self.knockedDown)))) == .awaitingToken
        )
        let first = try #require(try story.last(.registerPushToken(DeviceStory.token)).request)
        #expect(first.path == "/3/device/" + DeviceStory.token && !first.startsActivity)
        #expect(try aps(first)["content-state"] == .object(Self.knockedDown.members))
    }

    @Test func anEndBeforeTheTokenArrivesGoesToTheTokenWhenItDoes() throws {
        var story = DeviceStory()
        try story.send(.request(Self.remoteStart()))
        let endedAt = story.now
        #expect(try story.last(.end(.init(dismissal: .after(endedAt + .seconds(600))))) == .awaitingToken)
        story.now = story.now + .seconds(30)
        let push = try #require(try story.last(.registerPushToken(DeviceStory.token)).request)
        #expect(push.path == "/3/device/" + DeviceStory.token)
        #expect(try aps(push)["event"] == .string("end"))
        #expect(try aps(push)["dismissal-date"] == .number(JSONNumber((endedAt + .seconds(600)).epochSeconds)))
        #expect(try aps(push)["timestamp"] == .number(JSONNumber(story.now.epochSeconds)))
        #expect(push.expiration == endedAt + LifecyclePolicy.standard.dismissalWindow)
    }

    @Test func aScheduledRemoteStartIsSentAtItsStartDate() throws {
        var story = DeviceStory()
        let startDate = DeviceStory.start + .seconds(60)
        #expect(try story.last(.request(Self.remoteStart(startDate: startDate))) == .silent(.startsAtStartDate))
        story.now = startDate
        let push = try #require(try story.last(.start).request)
        #expect(push.startsActivity && push.path == "/3/device/" + Self.startToken)
        #expect(try aps(push)["event"] == .string("start"))
        #expect(try aps(push)["timestamp"] == .number(JSONNumber(startDate.epochSeconds)))
    }

    @Test func anUpdateWithoutATokenWaitsForOne() throws {
        var story = DeviceStory()
        try story.send(.request(DeviceStory.request()))
        #expect(
            try story.last(.update(.init(content: ActivityContent(contentState: Self.swordFound)))) == .awaitingToken
        )
        #expect(try story.last(.end(.init())) == .awaitingToken)
    }

    @Test func aTokenThatArrivesAfterUpdatesGetsTheNewestContentAtOnce() throws {
        var story = DeviceStory()
        try story.send(.request(DeviceStory.request()))
        try story.send(.update(.init(content: ActivityContent(contentState: Self.swordFound))))
        try story.send(.update(.init(content: ActivityContent(contentState: Self.knockedDown), priority: .low)))
        story.now = story.now + .seconds(5)
        let push = try #require(try story.last(.registerPushToken(DeviceStory.token)).request)
        #expect(try aps(push)["content-state"] == .object(Self.knockedDown.members))
        #expect(try aps(push)["event"] == .string("update"))
        #expect(try aps(push)["timestamp"] == .number(JSONNumber(DeviceStory.start.epochSeconds + 5)))
        #expect(push.priority == .high)
    }

    @Test func aTokenForContentTheDeviceStartedWithSendsNothing() throws {
        var story = DeviceStory()
        try story.send(.request(DeviceStory.request()))
        #expect(try story.last(.registerPushToken(DeviceStory.token)) == .silent(.deviceIsCurrent))
    }

    @Test func aBodyOverTheLimitIsNotSent() throws {
        // Attributes and content within the lifecycle's 4096 bytes; the aps wrapping pushes the
        // body over APNs' 4096.
        let contentState = JSONObject(["text": .string(String(repeating: "x", count: 4080))])
        var story = try DeviceStory.withToken(contentState)
        let rendering = try story.last(.update(.init(content: ActivityContent(contentState: contentState))))
        guard case .undeliverable(.payloadTooLarge(let size, let limit)) = rendering else {
            Issue.record("expected payloadTooLarge, got \(rendering)")
            return
        }
        #expect(limit == APNsRequest.maximumBodySize)
        #expect(size > limit)
        #expect(size == LiveActivityBodySize.of(contentState))
    }

    @Test func aTokenThatIsNotHexIsUndeliverableAndUppercaseHexIsLowered() throws {
        var story = DeviceStory()
        try story.send(.request(DeviceStory.request()))
        try story.send(.registerPushToken("not-a-token"))
        #expect(
            try story.last(.update(.init(content: ActivityContent(contentState: Self.swordFound))))
                == .undeliverable(.malformedToken)
        )
        try story.send(.registerPushToken("ABCDEF01"))
        story.now = story.now + .seconds(1)
        let push = try #require(
            try story.last(.update(.init(content: ActivityContent(contentState: Self.knockedDown)))).request
        )
        #expect(push.deviceToken == "abcdef01")
    }

    @Test func everyPushOfOneEventCarriesOneAPNsIDAndNoOtherEventDoes() throws {
        var story = try DeviceStory.withToken()
        var again = try DeviceStory.withToken()
        let update = Command.update(.init(content: ActivityContent(contentState: Self.swordFound)))
        let first = try #require(try story.last(update).request)
        let repeated = try #require(try again.last(update).request)
        story.now = story.now + .seconds(1)
        let next = try #require(try story.last(update).request)
        #expect(first.apnsID == repeated.apnsID)
        #expect(first.apnsID != next.apnsID)
        #expect(
            first.apnsID.wholeMatch(of: /[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/) != nil
        )
    }

    private func aps(_ request: APNsRequest) throws -> [String: JSONValue] {
        guard case .object(let root) = try JSONParser.parse(request.body), case .object(let aps)? = root["aps"] else {
            Issue.record("no aps object")
            return [:]
        }
        return aps
    }
}

/// The size of an update's body, computed independently of the renderer.
enum LiveActivityBodySize {
    static func of(_ contentState: JSONObject) -> Int {
        #"{"aps":{"timestamp":1685952000,"event":"update","content-state":"#.utf8.count + contentState.encodedSize + 2
    }
}

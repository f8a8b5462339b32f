import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventStore

/// One activity's life as delivery sees it: commands decided by the lifecycle at a simulated
/// clock, each event folded into a `DeliveryState` and rendered.
struct DeviceStory {
    static let start = Timestamp(microsecondsSince1970: 1_685_952_000_000_000)
    static let topic = "com.example.game.push-type.liveactivity"
    static let stream = StreamID(app: AppID(rawValue: "game")!, activity: ActivityID(rawValue: "panda")!)
    static let token = String(repeating: "ab", count: 32)

    let lifecycle = Lifecycle()
    let renderer = PushRenderer(policy: .standard)
    var now = DeviceStory.start
    var state: DeliveryState?
    var position: Int64 = 0

    var activity: Activity { state!.activity }

    /// Decides `command` now and renders each event it produces.
    @discardableResult
    mutating func send(_ command: Command, rules: AppRules = AppRules(defaultsOf: .standard)) throws -> [PushRendering]
    {
        let context = DecisionContext(app: rules, globalMaxOpen: 100, open: OpenCounts(app: 0, global: 0))
        return try lifecycle.decide(command, for: state?.activity, at: now, context: context).map { event in
            state = try DeliveryState(state, folding: event, by: lifecycle)
            position += 1
            let stored = StoredEvent(position: position, stream: Self.stream, event: event, recordedAt: now)
            return renderer.render(stored, leaving: state!, topic: Self.topic)
        }
    }

    /// What the last event of `command` renders to.
    mutating func last(_ command: Command) throws -> PushRendering {
        try send(command).last!
    }

    /// A story with an active activity whose token is registered.
    static func withToken(attributes: JSONObject = .empty, _ contentState: JSONObject = .empty) throws -> DeviceStory {
        var story = DeviceStory()
        try story.send(.request(request(attributes: attributes, contentState)))
        try story.send(.registerPushToken(token))
        return story
    }

    static func request(
        attributes: JSONObject = .empty,
        _ contentState: JSONObject = .empty,
        startDate: Timestamp? = nil
    ) -> Command.Request {
        .init(
            activityType: "AdventureAttributes",
            attributes: attributes,
            content: ActivityContent(contentState: contentState),
            startDate: startDate
        )
    }
}

extension PushRendering {
    /// The request, when this rendering sends one.
    var request: APNsRequest? {
        if case .push(let request) = self { request } else { nil }
    }
}

/// A JSON object from a literal written the way Apple's documentation prints payloads.
func json(_ text: String) throws -> JSONValue {
    try JSONParser.parse(Array(text.utf8))
}

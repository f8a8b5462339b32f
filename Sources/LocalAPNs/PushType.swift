import CanonicalJSON

/// The kinds of push to a device token the local APNs takes (`apns-push-type`), each with its
/// topic (`<bundle id>.push-type.<kind>`) and its body.
enum PushType: String {
    case liveActivity = "liveactivity"
    case widgets
    case controls

    /// The bundle id of `topic`, or why APNs refuses it for this kind. A topic of another kind
    /// (`….push-type.liveactivity` on a widget push) is `InvalidPushType`. A topic without the
    /// kind's suffix is `BadTopic` for a Live Activity; for a widget or control push APNs finds the
    /// token is not the topic's (`DeviceTokenNotForTopic`), the answer a sender that built the
    /// topic wrong gets.
    func bundleID(of topic: String) -> Result<String, LocalAPNs.Refusal> {
        let marker = ".push-type."
        guard let range = topic.ranges(of: marker).last, range.lowerBound > topic.startIndex else {
            return .failure(
                LocalAPNs.Refusal(answer: .refuse(400, self == .liveActivity ? "BadTopic" : "DeviceTokenNotForTopic"))
            )
        }
        guard topic[range.upperBound...] == rawValue else {
            let known = PushType(rawValue: String(topic[range.upperBound...])) != nil
            return .failure(LocalAPNs.Refusal(answer: .refuse(400, known ? "InvalidPushType" : "BadTopic")))
        }
        return .success(String(topic[..<range.lowerBound]))
    }

    /// What is wrong with `body` for this kind, as a device would find it; `nil` when nothing is.
    func bodyProblem(in body: [UInt8]) -> String? {
        switch self {
        case .liveActivity: LiveActivityBodyCheck.problem(in: body)
        case .widgets, .controls: Self.reloadProblem(in: body)
        }
    }

    /// A widget or control reload carries `{"aps":{"content-changed":true}}` and no Live Activity
    /// content: the device reloads, and the extension fetches its own data.
    private static func reloadProblem(in body: [UInt8]) -> String? {
        guard case .object(let root)? = try? JSONParser.parse(body) else { return "the body is not a JSON object" }
        guard case .object(let aps)? = root["aps"] else { return "no aps object" }
        guard aps["content-changed"] == .bool(true) else { return "aps.content-changed must be true" }
        if let key = ["event", "content-state", "alert"].first(where: { aps[$0] != nil }) {
            return "aps.\(key) is a Live Activity's: a reload carries only content-changed"
        }
        return nil
    }
}

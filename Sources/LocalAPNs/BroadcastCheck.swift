import CanonicalJSON
import Foundation

/// Broadcast (iOS 18), as APNs checks it: channel management (`/1/apps/<bundle id>/channels`:
/// create, read, delete; `/1/apps/<bundle id>/all-channels`) and broadcasts on a channel
/// (`POST /4/broadcasts/apps/<bundle id>`), with Apple's reasons — `FeatureNotEnabled`,
/// `MissingChannelId`, `BadChannelId`, `ChannelNotRegistered`, `BadRequestParams`,
/// `CannotCreateChannelConfig`. A broadcast cannot start an activity: one with `event: start`
/// is refused.
enum BroadcastCheck {
    static let broadcastPrefix = "/4/broadcasts/apps/"
    static let channelsPrefix = "/1/apps/"
    /// Apple keeps at most this many channels per app and environment.
    static let channelLimit = 10_000
    /// A broadcast's body may be larger than a push's.
    static let maximumBody = 5120

    static func check(
        _ request: IncomingRequest,
        on connection: Int,
        state: inout LocalAPNs.State,
        now: Int64
    ) -> Answer {
        let route: Route
        switch Route(path: request.path) {
        case nil: return .refuse(404, "BadPath")
        case let known?: route = known
        }
        let claims: ProviderTokenCheck.Claims
        switch LocalAPNs.authenticate(request, on: connection, state: &state, now: now) {
        case .failure(let refusal): return refusal.answer
        case .success(let verified): claims = verified.0
        }
        guard state.keys[claims.keyID]?.bundleIDs.contains(route.bundleID) == true else {
            return .refuse(400, "TopicDisallowed")
        }
        guard !state.broadcastDisabled.contains(route.bundleID) else { return .refuse(400, "FeatureNotEnabled") }
        switch route {
        case .broadcast(let bundleID):
            guard request.method == "POST" else { return .refuse(405, "MethodNotAllowed") }
            return broadcast(
                request,
                bundleID: bundleID,
                claims: claims,
                connection: connection,
                state: &state,
                now: now
            )
        case .channels(let bundleID):
            return channel(request, bundleID: bundleID, state: &state)
        case .allChannels(let bundleID):
            guard request.method == "GET" else { return .refuse(405, "MethodNotAllowed") }
            if let failure = LocalAPNs.plannedFailure(for: bundleID, state: &state) { return failure }
            var body = JSONObjectWriter()
            body.add("channels", .array((state.channels[bundleID] ?? [:]).keys.sorted().map(JSONValue.string)))
            return .respond(status: 200, headers: [("content-type", "application/json")], body: body.json)
        }
    }

    private enum Route {
        case broadcast(bundleID: String)
        case channels(bundleID: String)
        case allChannels(bundleID: String)

        init?(path: String) {
            if path.hasPrefix(broadcastPrefix) {
                let bundleID = String(path.dropFirst(broadcastPrefix.count))
                guard !bundleID.isEmpty, !bundleID.contains("/") else { return nil }
                self = .broadcast(bundleID: bundleID)
                return
            }
            let parts = path.dropFirst(channelsPrefix.count).split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, !parts[0].isEmpty else { return nil }
            switch parts[1] {
            case "channels": self = .channels(bundleID: String(parts[0]))
            case "all-channels": self = .allChannels(bundleID: String(parts[0]))
            default: return nil
            }
        }

        var bundleID: String {
            switch self {
            case .broadcast(let bundleID), .channels(let bundleID), .allChannels(let bundleID): bundleID
            }
        }
    }

    /// `POST /4/broadcasts/apps/<bundle id>`: to every device on the channel.
    private static func broadcast(
        _ request: IncomingRequest,
        bundleID: String,
        claims: ProviderTokenCheck.Claims,
        connection: Int,
        state: inout LocalAPNs.State,
        now: Int64
    ) -> Answer {
        guard request.header("apns-push-type") == "liveactivity" else { return .refuse(400, "InvalidPushType") }
        let policy: Int
        switch registeredChannel(request, bundleID: bundleID, state: state) {
        case .failure(let refusal): return refusal.answer
        case .success(let registered): policy = registered.policy
        }
        let channelID = request.header("apns-channel-id")!
        let priority = request.header("apns-priority").map { Int($0) } ?? 10
        guard let priority, [1, 5, 10].contains(priority) else { return .refuse(400, "BadPriority") }
        guard let text = request.header("apns-expiration"), let expiration = Int64(text), expiration >= 0,
            expiration <= now + 30 * 24 * 3600
        else { return .refuse(400, "BadExpirationDate") }
        // A channel that stores nothing takes only pushes that expire at once.
        guard policy != 0 || expiration == 0 else {
            return .refuse(400, "BadExpirationDate", detail: "a channel with message storage policy 0 takes 0")
        }
        let requestID = request.header("apns-request-id")
        if let requestID, !LocalAPNs.isLowercaseUUID(requestID) { return .refuse(400, "BadMessageId") }
        let names = request.headers.map(\.name)
        guard Set(names).count == names.count else { return .refuse(400, "DuplicateHeaders") }
        guard !request.body.isEmpty else { return .refuse(400, "PayloadEmpty") }
        guard request.body.count <= maximumBody else { return .refuse(413, "PayloadTooLarge") }
        if let problem = LiveActivityBodyCheck.problem(in: request.body) {
            return .refuse(400, "BadPayload", detail: problem)
        }
        if case .object(let root)? = try? JSONParser.parse(request.body), case .object(let aps)? = root["aps"],
            aps["event"] == .string("start")
        {
            return .refuse(400, "BadRequestParams", detail: "a broadcast cannot start a Live Activity")
        }
        if let failure = LocalAPNs.plannedFailure(for: channelID, state: &state) { return failure }
        let id = requestID ?? UUID().uuidString.lowercased()
        state.accept(
            LocalAPNs.ReceivedBroadcast(
                channelID: channelID,
                bundleID: bundleID,
                priority: priority,
                expiration: expiration,
                requestID: id,
                body: request.body,
                teamID: claims.teamID,
                connection: connection
            )
        )
        return .respond(
            status: 200,
            headers: [("apns-request-id", id), ("apns-unique-id", UUID().uuidString.lowercased())],
            body: []
        )
    }

    /// `/1/apps/<bundle id>/channels`: `POST` creates a channel, `GET` reads it and `DELETE`
    /// deletes it (the last two name it with `apns-channel-id`).
    private static func channel(_ request: IncomingRequest, bundleID: String, state: inout LocalAPNs.State) -> Answer {
        if let failure = LocalAPNs.plannedFailure(for: bundleID, state: &state) { return failure }
        switch request.method {
        case "POST":
            guard case .object(let body)? = try? JSONParser.parse(request.body),
                case .number(let number)? = body["message-storage-policy"], let policy = number.integer,
                [0, 1].contains(policy), body["push-type"] == .string("LiveActivity"), body.count == 2
            else {
                return .refuse(
                    400,
                    "BadRequestParams",
                    detail: #"the body must be {"message-storage-policy": 0 or 1, "push-type": "LiveActivity"}"#
                )
            }
            guard (state.channels[bundleID]?.count ?? 0) < channelLimit else {
                return .refuse(400, "CannotCreateChannelConfig", detail: "the app has \(channelLimit) channels")
            }
            let id = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            state.channels[bundleID, default: [:]][id] = Int(policy)
            return .respond(
                status: 201,
                headers: [("apns-channel-id", id), ("apns-request-id", UUID().uuidString.lowercased())],
                body: []
            )
        case "GET":
            switch registeredChannel(request, bundleID: bundleID, state: state) {
            case .failure(let refusal):
                return refusal.answer
            case .success(let registered):
                var body = JSONObjectWriter()
                body.add("message-storage-policy", .number(JSONNumber(registered.policy)))
                body.add("push-type", .string("LiveActivity"))
                return .respond(status: 200, headers: [("content-type", "application/json")], body: body.json)
            }
        case "DELETE":
            switch registeredChannel(request, bundleID: bundleID, state: state) {
            case .failure(let refusal):
                return refusal.answer
            case .success(let registered):
                state.channels[bundleID]?[registered.id] = nil
                return .respond(status: 204, headers: [], body: [])
            }
        default:
            return .refuse(405, "MethodNotAllowed")
        }
    }

    /// The channel `apns-channel-id` names, and its storage policy.
    private static func registeredChannel(
        _ request: IncomingRequest,
        bundleID: String,
        state: LocalAPNs.State
    ) -> Result<(id: String, policy: Int), LocalAPNs.Refusal> {
        guard let id = request.header("apns-channel-id"), !id.isEmpty else {
            return .failure(.init(answer: .refuse(400, "MissingChannelId")))
        }
        guard Data(base64Encoded: id) != nil else { return .failure(.init(answer: .refuse(400, "BadChannelId"))) }
        guard let policy = state.channels[bundleID]?[id] else {
            return .failure(.init(answer: .refuse(400, "ChannelNotRegistered")))
        }
        return .success((id, policy))
    }
}

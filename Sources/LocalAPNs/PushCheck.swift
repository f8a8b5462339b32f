import CanonicalJSON
import Foundation

/// One request as a stream delivered it.
struct IncomingRequest {
    let method: String
    let path: String
    /// Names in lowercase.
    let headers: [(name: String, value: String)]
    let body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// What the local APNs does with a request.
enum Answer {
    case respond(status: Int, headers: [(String, String)], body: [UInt8])
    case stall
    case goAway(reason: String)

    static func refuse(_ status: Int, _ reason: String, timestamp: Int64? = nil, detail: String? = nil) -> Answer {
        var body = JSONObjectWriter()
        body.add("reason", .string(reason))
        body.add("timestamp", timestamp.map { .number(JSONNumber($0)) })
        body.add("detail", detail.map { .string($0) })
        return .respond(status: status, headers: [("content-type", "application/json")], body: body.json)
    }
}

extension LocalAPNs {
    /// Checks a request in the order APNs does (the route, the provider token, the headers, the
    /// token, the body), then the device's state and the planned failures; a push that passes
    /// everything is kept and answered 200.
    static func answer(_ request: IncomingRequest, on connection: Int, state: inout State, now: Int64) -> Answer {
        let answer = check(request, on: connection, state: &state, now: now)
        if case .respond(let status, _, let body) = answer, status != 200,
            case .object(let members)? = try? JSONParser.parse(body), case .string(let reason)? = members["reason"]
        {
            state.refusals[reason, default: 0] += 1
        }
        return answer
    }

    private static func check(_ request: IncomingRequest, on connection: Int, state: inout State, now: Int64) -> Answer
    {
        let devicePrefix = "/3/device/"
        if request.path.hasPrefix(BroadcastCheck.broadcastPrefix)
            || request.path.hasPrefix(BroadcastCheck.channelsPrefix)
        {
            return BroadcastCheck.check(request, on: connection, state: &state, now: now)
        }
        guard request.path.hasPrefix(devicePrefix) else { return .refuse(404, "BadPath") }
        guard request.method == "POST" else { return .refuse(405, "MethodNotAllowed") }
        let claims: ProviderTokenCheck.Claims
        let providerToken: String
        switch authenticate(request, on: connection, state: &state, now: now) {
        case .failure(let refusal): return refusal.answer
        case .success(let verified): (claims, providerToken) = verified
        }
        let keys = state.keys

        // The headers.
        guard let pushType = request.header("apns-push-type").flatMap(PushType.init) else {
            return .refuse(400, "InvalidPushType")
        }
        guard let topic = request.header("apns-topic") else { return .refuse(400, "MissingTopic") }
        let bundleID: String
        switch pushType.bundleID(of: topic) {
        case .failure(let refusal): return refusal.answer
        case .success(let named): bundleID = named
        }
        guard keys[claims.keyID]?.bundleIDs.contains(bundleID) == true else {
            return .refuse(400, "TopicDisallowed")
        }
        let priority = request.header("apns-priority").map { Int($0) } ?? 10
        guard let priority, [5, 10].contains(priority) else { return .refuse(400, "BadPriority") }
        var expiration: Int64? = nil
        if let text = request.header("apns-expiration") {
            guard let value = Int64(text), value >= 0, value <= now + 30 * 24 * 3600 else {
                return .refuse(400, "BadExpirationDate")
            }
            expiration = value
        }
        let apnsID = request.header("apns-id")
        if let apnsID, !isLowercaseUUID(apnsID) { return .refuse(400, "BadMessageId") }
        if let collapseID = request.header("apns-collapse-id"), collapseID.utf8.count > 64 {
            return .refuse(400, "BadCollapseId")
        }
        let names = request.headers.map(\.name)
        guard Set(names).count == names.count else { return .refuse(400, "DuplicateHeaders") }

        // The device token.
        let deviceToken = String(request.path.dropFirst(devicePrefix.count))
        guard !deviceToken.isEmpty else { return .refuse(400, "MissingDeviceToken") }
        guard deviceToken.utf8.count == 64, deviceToken.utf8.allSatisfy(isHexDigit) else {
            return .refuse(400, "BadDeviceToken")
        }
        let device = deviceToken.lowercased()

        // The body.
        guard !request.body.isEmpty else { return .refuse(400, "PayloadEmpty") }
        guard request.body.count <= 4096 else { return .refuse(413, "PayloadTooLarge") }
        if let problem = pushType.bodyProblem(in: request.body) {
            return .refuse(400, "BadPayload", detail: problem)
        }

        // The device, and what the test planned.
        if let since = state.unregistered[device] { return .refuse(410, "Unregistered", timestamp: since) }
        if let failure = plannedFailure(for: device, state: &state) { return failure }

        let id = apnsID ?? UUID().uuidString.lowercased()
        state.accept(
            ReceivedPush(
                deviceToken: device,
                pushType: pushType.rawValue,
                topic: topic,
                priority: priority,
                expiration: expiration,
                apnsID: id,
                body: request.body,
                teamID: claims.teamID,
                keyID: claims.keyID,
                connection: connection,
                providerToken: providerToken
            )
        )
        return .respond(
            status: 200,
            headers: [("apns-id", id), ("apns-unique-id", UUID().uuidString.lowercased())],
            body: []
        )
    }

    /// A refusal, as an error.
    struct Refusal: Error {
        let answer: Answer
    }

    /// Checks the provider token of a request, and the connection it came on (one team per
    /// connection, a new token at most every 20 minutes); its claims and the token.
    static func authenticate(
        _ request: IncomingRequest,
        on connection: Int,
        state: inout State,
        now: Int64
    ) -> Result<(ProviderTokenCheck.Claims, String), Refusal> {
        let keys = state.keys
        let claims: ProviderTokenCheck.Claims
        let providerToken: String
        var record = state.connections[connection] ?? ConnectionRecord()
        if let verified = record.verified, request.header("authorization") == "bearer " + verified.token {
            // The token this connection already proved: only its age can have changed.
            guard now - verified.claims.issuedAt <= 3600 else {
                return .failure(Refusal(answer: .refuse(403, "ExpiredProviderToken")))
            }
            (claims, providerToken) = (verified.claims, verified.token)
        } else {
            switch ProviderTokenCheck.verify(
                authorization: request.header("authorization"),
                now: now,
                keys: { keys[$0] }
            )
            {
            case .failure(.missing): return .failure(Refusal(answer: .refuse(403, "MissingProviderToken")))
            case .failure(.invalid): return .failure(Refusal(answer: .refuse(403, "InvalidProviderToken")))
            case .failure(.expired): return .failure(Refusal(answer: .refuse(403, "ExpiredProviderToken")))
            case .success(let verified): (claims, providerToken) = verified
            }
        }
        if let team = record.teamID, team != claims.teamID {
            return .failure(Refusal(answer: .refuse(403, "InvalidProviderToken")))
        }
        if let current = record.providerToken, current != providerToken {
            guard now - record.providerTokenSince >= 20 * 60 else {
                return .failure(Refusal(answer: .refuse(429, "TooManyProviderTokenUpdates")))
            }
        }
        if record.providerToken != providerToken {
            record.providerToken = providerToken
            record.providerTokenSince = now
        }
        record.verified = (claims, providerToken)
        record.teamID = claims.teamID
        state.connections[connection] = record
        return .success((claims, providerToken))
    }

    /// The planned failure that applies to a request to `target` (a device token or a channel),
    /// as an answer; `nil` when none applies.
    static func plannedFailure(for target: String, state: inout State) -> Answer? {
        switch state.takeFailure(for: target) {
        case .status(let status, let reason)?: return .refuse(status, reason)
        case .stall?:
            state.stalled += 1
            return .stall
        case .goAway(let reason)?: return .goAway(reason: reason)
        case nil: return nil
        }
    }

    static func isLowercaseUUID(_ text: String) -> Bool {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false).map(\.utf8)
        return groups.map(\.count) == [8, 4, 4, 4, 12]
            && groups.allSatisfy {
                $0.allSatisfy { isHexDigit($0) && !(UInt8(ascii: "A")...UInt8(ascii: "F")).contains($0) }
            }
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }
}

import ActivityLifecycle
import CanonicalJSON
import EventStore

// The bodies of requests, updates and ends (`ActivityRequest`, `ActivityUpdate` and `ActivityEnd`
// in openapi.yaml), read from their bytes straight into the state machine's commands, with the
// rules the document states beside the types (lengths, `dependentRequired`, `if`/`then`).

/// A request's body: the command, and what the server must look up before running it.
struct ActivityRequestBody {
    var activityID: ActivityID?
    var command: Command.Request
    /// The broadcast channel asked for, when the activity goes on one.
    var channelID: String?
    /// The alert of the push-to-start asked for, when the device is to start the activity.
    var remoteStartAlert: Alert?

    static let members: Set<String> = [
        "activityId", "activityType", "attributes", "contentState", "staleDate", "relevanceScore", "startDate",
        "pushType", "style", "deviceId", "timestamp", "remoteStart", "channelId",
    ]

    init(_ bytes: [UInt8]) throws(Problem) {
        let body = try BodyObject(body: bytes, known: Self.members)
        let activityType = try body.required("activityType", body.string)
        // Counted as JSON Schema's maxLength counts: in Unicode scalars.
        guard (1...IdentifierRules.maximumLength).contains(activityType.unicodeScalars.count) else {
            throw Problem.invalidRequest("activityType must be 1–128 characters.", field: "/activityType")
        }
        let pushType: PushType? = try body.enumerated("pushType")
        let deviceID: DeviceID? = try body.value("deviceId", IdentifierRules.requirement)
        activityID = try body.value("activityId", IdentifierRules.requirement)
        channelID = try body.string("channelId")
        remoteStartAlert = try body.nested("remoteStart", known: ["alert"]).map { remoteStart throws(Problem) in
            try remoteStart.required("alert") { key throws(Problem) in try Alert(remoteStart, key) }
        }
        command = Command.Request(
            activityType: activityType,
            attributes: try body.object("attributes") ?? .empty,
            content: try ActivityContent(body, contentState: body.required("contentState", body.object)),
            startDate: try body.timestamp("startDate"),
            pushType: channelID == nil ? pushType : .channel,
            style: try body.enumerated("style"),
            deviceID: deviceID,
            timestamp: try body.timestamp("timestamp")
        )
        try Self.check(
            channelID: channelID,
            pushType: pushType,
            remoteStart: remoteStartAlert != nil,
            deviceID: deviceID
        )
    }

    /// The rules between a channel, the push type and a remote start.
    private static func check(
        channelID: String?,
        pushType: PushType?,
        remoteStart: Bool,
        deviceID: DeviceID?
    ) throws(Problem) {
        guard let channelID else {
            guard pushType != .channel else {
                throw Problem.invalidRequest(
                    "pushType channel needs the channelId of one of the app's channels "
                        + "(POST /v1/admin/apps/{appId}/channels).",
                    field: "/channelId"
                )
            }
            if remoteStart, deviceID == nil {
                throw Problem.invalidRequest(
                    "A remote start goes to one device: send its deviceId.",
                    field: "/deviceId"
                )
            }
            return
        }
        guard pushType != .token else {
            throw Problem.invalidRequest(
                "An activity on a channel is updated by broadcast: send pushType channel (or none) with channelId.",
                field: "/pushType"
            )
        }
        guard StoredChannel.isWellFormedID(channelID) else {
            throw Problem.invalidRequest(
                "channelId must be a channel id as APNs gives them (base64).",
                field: "/channelId"
            )
        }
        if remoteStart, deviceID == nil { throw Problem.broadcastCannotStart }
    }
}

extension Command.Update {
    static let members: Set<String> = [
        "contentState", "staleDate", "relevanceScore", "alert", "priority", "timestamp", "widgetReload",
    ]

    init(body bytes: [UInt8]) throws(Problem) {
        let body = try BodyObject(body: bytes, known: Self.members)
        self.init(
            content: try ActivityContent(body, contentState: body.required("contentState", body.object)),
            alert: try Alert(body, "alert"),
            priority: try Priority(body, "priority"),
            timestamp: try body.timestamp("timestamp"),
            widgetReload: try WidgetReload(body)
        )
    }
}

extension Command.End {
    static let members: Set<String> = [
        "contentState", "staleDate", "relevanceScore", "dismissal", "timestamp", "widgetReload",
    ]

    init(body bytes: [UInt8]) throws(Problem) {
        let body = try BodyObject(body: bytes, known: Self.members)
        let content: ActivityContent?
        if let contentState = try body.object("contentState") {
            content = try ActivityContent(body, contentState: contentState)
        } else {
            guard !body.has("staleDate"), !body.has("relevanceScore") else {
                throw Problem.invalidRequest(
                    "staleDate and relevanceScore belong to final content: send contentState with them.",
                    field: body.has("staleDate") ? "/staleDate" : "/relevanceScore"
                )
            }
            content = nil
        }
        self.init(
            content: content,
            dismissal: try DismissalPolicy(body),
            timestamp: try body.timestamp("timestamp"),
            widgetReload: try WidgetReload(body)
        )
    }
}

extension ActivityContent {
    /// `contentState` with the `staleDate` and `relevanceScore` beside it.
    fileprivate init(_ body: BodyObject, contentState: JSONObject) throws(Problem) {
        var relevanceScore: RelevanceScore?
        if let number = try body.number("relevanceScore") {
            guard let score = RelevanceScore(number.double) else {
                throw body.mistyped("relevanceScore", "a number, 0 or more")
            }
            relevanceScore = score
        }
        self.init(
            contentState: contentState,
            staleDate: try body.timestamp("staleDate"),
            relevanceScore: relevanceScore
        )
    }
}

extension Alert {
    /// The alert at member `key` of `object`: `{title, body, sound?}`.
    fileprivate init?(_ object: BodyObject, _ key: String) throws(Problem) {
        guard let alert = try object.nested(key, known: ["title", "body", "sound"]) else { return nil }
        self.init(
            title: try alert.required("title", alert.string),
            body: try alert.required("body", alert.string),
            sound: try alert.string("sound")
        )
    }
}

extension WidgetReload {
    /// An update's or end's `widgetReload`: `{}` for every widget of the activity's device, or
    /// `{"widgetKinds": […]}` for the devices that listed a widget of one of those kinds.
    fileprivate init?(_ body: BodyObject) throws(Problem) {
        guard let reload = try body.nested("widgetReload", known: ["widgetKinds"]) else { return nil }
        guard let kinds = try reload.strings("widgetKinds") else {
            self.init()
            return
        }
        guard (1...100).contains(kinds.count) else { throw reload.mistyped("widgetKinds", "1–100 widget kinds") }
        for (index, kind) in kinds.enumerated() {
            _ = try LivelineAPI.name(kind, maximum: 128, field: "\(reload.field("widgetKinds"))/\(index)")
        }
        self.init(widgetKinds: kinds)
    }
}

extension Priority {
    fileprivate init?(_ object: BodyObject, _ key: String) throws(Problem) {
        guard let number = try object.number(key) else { return nil }
        guard let value = number.integer.flatMap({ Priority(rawValue: Int($0)) }) else {
            throw object.mistyped(key, "5 or 10")
        }
        self = value
    }
}

extension DismissalPolicy {
    /// An end's `dismissal`: `{"policy": "immediate"}`, `{"policy": "default"}` or
    /// `{"policy": "after", "date": …}`; the default policy without one.
    fileprivate init(_ body: BodyObject) throws(Problem) {
        guard let dismissal = try body.nested("dismissal", known: ["policy", "date"]) else {
            self = .default
            return
        }
        let policy = try dismissal.required("policy", dismissal.string)
        switch policy {
        case "after": self = .after(try dismissal.required("date", dismissal.timestamp))
        case "immediate": self = .immediate
        case "default": self = .default
        default: throw dismissal.mistyped("policy", #"one of "immediate", "default", "after""#)
        }
        if policy != "after", dismissal.has("date") {
            throw Problem.invalidRequest(
                "The field \(dismissal.field("date")) is only for the policy \"after\"; \"\(policy)\" takes none.",
                field: dismissal.field("date")
            )
        }
    }
}

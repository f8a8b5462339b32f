import ActivityLifecycle
import CanonicalJSON

/// Request bodies (generated from openapi.yaml) as commands, with the rules the schema types
/// cannot say themselves. Sizes, timestamps and states are the state machine's to judge.
extension Command.Request {
    init(_ body: Components.Schemas.ActivityRequest) throws {
        // Counted as JSON Schema's maxLength counts: in Unicode scalars.
        guard (1...IdentifierRules.maximumLength).contains(body.activityType.unicodeScalars.count) else {
            throw Problem.invalidRequest("activityType must be 1–128 characters.", field: "/activityType")
        }
        self.init(
            activityType: body.activityType,
            attributes: body.attributes ?? .empty,
            content: ActivityContent(
                contentState: body.contentState,
                staleDate: body.staleDate,
                relevanceScore: body.relevanceScore
            ),
            startDate: body.startDate,
            pushType: body.channelId == nil ? body.pushType : .channel,
            style: body.style,
            deviceID: body.deviceId,
            timestamp: body.timestamp
        )
    }
}

extension Command.Update {
    init(_ body: Components.Schemas.ActivityUpdate) {
        self.init(
            content: ActivityContent(
                contentState: body.contentState,
                staleDate: body.staleDate,
                relevanceScore: body.relevanceScore
            ),
            alert: body.alert.map(Alert.init),
            priority: body.priority,
            timestamp: body.timestamp
        )
    }
}

extension Command.End {
    init(_ body: Components.Schemas.ActivityEnd) throws {
        let content: ActivityContent?
        if let contentState = body.contentState {
            content = ActivityContent(
                contentState: contentState,
                staleDate: body.staleDate,
                relevanceScore: body.relevanceScore
            )
        } else {
            guard body.staleDate == nil, body.relevanceScore == nil else {
                throw Problem.invalidRequest(
                    "staleDate and relevanceScore belong to final content: send contentState with them.",
                    field: body.staleDate == nil ? "/relevanceScore" : "/staleDate"
                )
            }
            content = nil
        }
        self.init(content: content, dismissal: DismissalPolicy(body.dismissal), timestamp: body.timestamp)
    }
}

extension DismissalPolicy {
    init(_ dismissal: Components.Schemas.Dismissal?) {
        switch dismissal {
        case nil, ._default: self = .default
        case .immediate: self = .immediate
        case .after(let after): self = .after(after.date)
        }
    }
}

extension Command {
    static func registerPushToken(_ body: Components.Schemas.PushTokenRegistration) throws -> Command {
        guard body.pushToken.isVisibleASCII(lengths: 1...512) else {
            throw Problem.invalidRequest("pushToken must be 1–512 visible ASCII characters.", field: "/pushToken")
        }
        return .registerPushToken(body.pushToken)
    }
}

extension Alert {
    init(_ alert: Components.Schemas.Alert) {
        self.init(title: alert.title, body: alert.body, sound: alert.sound)
    }
}

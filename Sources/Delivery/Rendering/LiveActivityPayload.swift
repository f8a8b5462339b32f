import ActivityLifecycle
import CanonicalJSON

/// The `aps` body of a Live Activity push (ActivityKit's push payload).
struct LiveActivityPayload {
    enum Kind {
        /// Push-to-start: the device creates the activity of this `ActivityAttributes` type and
        /// reports its push token (`input-push-token`), or subscribes it to a channel
        /// (`input-push-channel`).
        case start(attributesType: String, attributes: JSONObject, channelID: String?)
        case update
        case end(dismissalDate: Timestamp?)

        var startsActivity: Bool {
            if case .start = self { true } else { false }
        }

        /// The payload's `event`.
        var event: String {
            switch self {
            case .start: "start"
            case .update: "update"
            case .end: "end"
            }
        }
    }

    let kind: Kind
    /// The device keeps the push with the latest timestamp.
    let timestamp: Timestamp
    let content: ActivityContent
    let alert: Alert?

    /// `{"aps": {…}}`, with the members in the order Apple's examples list them.
    var json: [UInt8] {
        var aps = JSONObjectWriter()
        aps.add("timestamp", .seconds(timestamp))
        switch kind {
        case .start(let attributesType, let attributes, let channelID):
            aps.add("event", .string(kind.event))
            aps.add("attributes-type", .string(attributesType))
            aps.add("attributes", attributes)
            if let channelID {
                aps.add("input-push-channel", .string(channelID))
            } else {
                aps.add("input-push-token", .number(JSONNumber(1)))
            }
        case .update:
            aps.add("event", .string(kind.event))
        case .end(let dismissalDate):
            aps.add("event", .string(kind.event))
            aps.add("dismissal-date", dismissalDate.map(JSONValue.seconds))
        }
        aps.add("content-state", content.contentState)
        aps.add("stale-date", content.staleDate.map(JSONValue.seconds))
        aps.add("relevance-score", content.relevanceScore.map { .number(JSONNumber($0.value)) })
        aps.add("alert", alert.map(Self.alert))
        var root = JSONObjectWriter()
        root.add("aps", aps)
        return root.json
    }

    private static func alert(_ alert: Alert) -> JSONObjectWriter {
        var writer = JSONObjectWriter()
        writer.add("title", .string(alert.title))
        writer.add("body", .string(alert.body))
        writer.add("sound", alert.sound.map(JSONValue.string))
        return writer
    }
}

extension JSONValue {
    fileprivate static func seconds(_ timestamp: Timestamp) -> JSONValue {
        .number(JSONNumber(timestamp.epochSeconds))
    }
}

import ActivityLifecycle
import CanonicalJSON

/// The `aps` body of a Live Activity push (ActivityKit's push payload).
struct LiveActivityPayload {
    enum Kind {
        case update
        case end(dismissalDate: Timestamp?)
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
        case .update:
            aps.add("event", .string("update"))
        case .end(let dismissalDate):
            aps.add("event", .string("end"))
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

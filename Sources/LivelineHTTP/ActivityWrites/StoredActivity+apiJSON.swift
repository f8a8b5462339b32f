import ActivityLifecycle
import CanonicalJSON
import EventStore

extension StoredActivity {
    /// The activity as the write routes answer with it (`Activity` in openapi.yaml, without what
    /// only a read adds: `lastDelivery`, `tokens`, `channelId`), keys sorted as the generated
    /// code sorts them.
    var apiJSON: [UInt8] {
        let activity = activity
        let content = activity.content
        var writer = JSONObjectWriter()
        writer.add("activatedAt", activity.activatedAt.map(Self.time))
        writer.add("activityId", .string(stream.activity.rawValue))
        writer.add("activityType", .string(activity.activityType))
        writer.add("attributes", activity.attributes)
        writer.add("contentState", content.contentState)
        writer.add("deviceId", activity.deviceID.map { .string($0.rawValue) })
        writer.add("dismissalDate", activity.dismissalDate.map(Self.time))
        writer.add("dismissedAt", activity.dismissedAt.map(Self.time))
        writer.add("endReason", activity.endReason.map { .string($0.rawValue) })
        writer.add("endedAt", activity.endedAt.map(Self.time))
        writer.add("lastTimestamp", activity.lastTimestamp.map(Self.time))
        writer.add(
            "nextDeadline",
            nextDeadline.map { deadline in
                var object = JSONObjectWriter()
                object.add("due", Self.time(deadline.due))
                object.add("kind", .string(deadline.kind.rawValue))
                return object
            }
        )
        writer.add("pushToken", activity.pushToken.map { .string($0) })
        writer.add("pushType", activity.pushType.map { .string($0.rawValue) })
        writer.add("relevanceScore", content.relevanceScore.map { .number(JSONNumber($0.value)) })
        writer.add("requestedAt", Self.time(activity.requestedAt))
        writer.add("staleDate", content.staleDate.map(Self.time))
        writer.add("startDate", activity.startDate.map(Self.time))
        writer.add("state", .string(activity.state.rawValue))
        writer.add("style", activity.style.map { .string($0.rawValue) })
        writer.add("version", .number(JSONNumber(activity.version)))
        return writer.json
    }

    private static func time(_ timestamp: Timestamp) -> JSONValue {
        .string(RFC3339.format(timestamp))
    }
}

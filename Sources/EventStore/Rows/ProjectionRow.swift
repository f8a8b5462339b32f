import ActivityLifecycle
import Postgres

/// The one place that maps an `Activity` to the columns of `activities`: read from the
/// `liveline_activity_rows` view (typed, binary), written as the JSON object that
/// `liveline_append` hands to `jsonb_populate_record`.
enum ProjectionRow {
    /// The number of columns of `liveline_activity_rows`, read by `stored(from:at:)`.
    static let columnCount = 25

    /// The activity in the columns of `liveline_activity_rows` starting at `offset`, or `nil`
    /// when they are NULL (a left join that found no activity).
    static func stored(from row: PostgresRow, at offset: Int) throws -> StoredActivity? {
        func column<T: PostgresDecodable>(_ index: Int, as type: T.Type = T.self) throws -> T {
            try row.decode(offset + index, as: type)
        }
        func timestamp(_ index: Int) throws -> Timestamp? {
            try column(index, as: PostgresTimestamp?.self).map(Timestamp.init)
        }
        func json(_ index: Int) throws -> JSONObject {
            do {
                return try JSONParser.parseObject(column(index, as: JSONB.self).utf8)
            } catch {
                throw EventStoreError.unreadableRow("activities: \(error)")
            }
        }
        func parsed<T>(_ index: Int, _ make: (String) -> T?) throws -> T? {
            guard let text = try column(index, as: String?.self) else { return nil }
            guard let value = make(text) else { throw EventStoreError.unreadableRow("activities: \"\(text)\"") }
            return value
        }
        guard let app = try parsed(0, AppID.init(rawValue:)) else { return nil }
        guard let activityID = try parsed(1, ActivityID.init(rawValue:)),
            let state = try parsed(2, ActivityState.init(rawValue:)),
            let requestedAt = try timestamp(14), let lastEventAt = try timestamp(21)
        else { throw EventStoreError.unreadableRow("activities: missing columns") }
        let deadlineKind = try parsed(20, Deadline.Kind.init(rawValue:))
        let deadlineAt = try timestamp(19)
        let activity = Activity(
            state: state,
            version: try column(3),
            activityType: try column(4),
            attributes: try json(5),
            content: ActivityContent(
                contentState: try json(6),
                staleDate: try timestamp(7),
                relevanceScore: try column(8, as: Double?.self).flatMap(RelevanceScore.init)
            ),
            startDate: try timestamp(12),
            pushType: try parsed(9, PushType.init(rawValue:)),
            style: try parsed(22, ActivityStyle.init(rawValue:)),
            deviceID: try parsed(11, DeviceID.init(rawValue:)),
            pushToken: try column(10),
            requestedAt: requestedAt,
            activatedAt: try timestamp(15),
            endedAt: try timestamp(16),
            endReason: try parsed(23, EndReason.init(rawValue:)),
            dismissedAt: try timestamp(17),
            dismissalDate: try timestamp(18),
            lastTimestamp: try timestamp(13),
            lastEventAt: lastEventAt,
            recentHighPriorityUpdates: try column(24, as: PostgresArray<PostgresTimestamp>.self).elements.map(
                Timestamp.init
            )
        )
        return StoredActivity(
            stream: StreamID(app: app, activity: activityID),
            activity: activity,
            nextDeadline: deadlineKind.flatMap { kind in deadlineAt.map { Deadline(kind: kind, due: $0) } }
        )
    }

    /// The row as the JSON object `jsonb_populate_record(NULL::activities, …)` reads. The
    /// stripes are filled in by `liveline_append`.
    static func json(_ stored: StoredActivity) -> JSONB {
        let activity = stored.activity
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        func time(_ value: Timestamp?) -> JSONValue { value.map { .string($0.description) } ?? .null }
        let row: [String: JSONValue] = [
            "app_id": .string(stored.stream.app.rawValue),
            "activity_id": .string(stored.stream.activity.rawValue),
            "state": .string(activity.state.rawValue),
            "version": .number(Double(activity.version)),
            "activity_type": .string(activity.activityType),
            "attributes": .object(activity.attributes.members),
            "content_state": .object(activity.content.contentState.members),
            "stale_date": time(activity.content.staleDate),
            "relevance_score": activity.content.relevanceScore.map { .number($0.value) } ?? .null,
            "push_type": text(activity.pushType?.rawValue),
            "push_token": text(activity.pushToken),
            "device_id": text(activity.deviceID?.rawValue),
            "start_date": time(activity.startDate),
            "last_timestamp": time(activity.lastTimestamp),
            "requested_at": time(activity.requestedAt),
            "activated_at": time(activity.activatedAt),
            "ended_at": time(activity.endedAt),
            "dismissed_at": time(activity.dismissedAt),
            "dismissal_date": time(activity.dismissalDate),
            "next_deadline_at": time(stored.nextDeadline?.due),
            "next_deadline_kind": text(stored.nextDeadline?.kind.rawValue),
            "last_event_at": time(activity.lastEventAt),
            "style": text(activity.style?.rawValue),
            "end_reason": text(activity.endReason?.rawValue),
            "priority_updates": .array(activity.recentHighPriorityUpdates.map { .string($0.description) }),
        ]
        return JSONB(utf8: JSONValue.object(row).canonicalJSON)
    }
}

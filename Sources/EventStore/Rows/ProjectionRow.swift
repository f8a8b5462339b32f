import ActivityLifecycle
import Postgres

/// The one place that maps an `Activity` to the columns of `activities`: read from the
/// `liveline_activity_rows` view (typed, binary), written as the JSON object that
/// `liveline_append` hands to `jsonb_populate_record`, or as a `COPY` row (replay).
enum ProjectionRow {
    /// The number of columns of `liveline_activity_rows`, read by `stored(from:at:)`.
    static var columnCount: Int { columnNames.count }

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

    /// The columns of `liveline_activity_rows`, in order: what `stored(from:at:)` reads and
    /// `json` and `copy` write.
    static let columnNames = [
        "app_id", "activity_id", "state", "version", "activity_type", "attributes", "content_state", "stale_date",
        "relevance_score", "push_type", "push_token", "device_id", "start_date", "last_timestamp", "requested_at",
        "activated_at", "ended_at", "dismissed_at", "dismissal_date", "next_deadline_at", "next_deadline_kind",
        "last_event_at", "style", "end_reason", "priority_updates",
    ]

    /// One column's value, as the row is written.
    enum Value {
        case text(String?)
        case integer(Int)
        case number(Double?)
        case time(Timestamp?)
        case object(JSONObject)
        case times([Timestamp])

        /// Adds the value to `row`, as the member `key` (`null` when absent).
        func add(_ key: String, to row: inout JSONObjectWriter) {
            switch self {
            case .text(let text): row.add(key, text.map(JSONValue.string) ?? .null)
            case .integer(let integer): row.add(key, .number(JSONNumber(integer)))
            case .number(let number): row.add(key, number.map { .number(JSONNumber($0)) } ?? .null)
            case .time(let time): row.add(key, time.map { .string($0.description) } ?? .null)
            case .object(let object): row.add(key, object)
            case .times(let times): row.add(key, .array(times.map { .string($0.description) }))
            }
        }

        /// Appends the value to the row `rows` is building, in `COPY`'s text format.
        func appendField(to rows: inout CopyTextRows) {
            switch self {
            case .text(let text): rows.appendField(text)
            case .integer(let integer): rows.appendField(String(integer))
            case .number(let number): rows.appendField(number.map { "\($0)" })
            case .time(let time): rows.appendField(time?.description)
            case .object(let object): rows.appendField(utf8: object.canonicalJSON)
            // An array literal: timestamps hold nothing that needs quoting.
            case .times(let times): rows.appendField("{\(times.map(\.description).joined(separator: ","))}")
            }
        }
    }

    /// The row's values, in the order of `columnNames`.
    static func values(_ stored: StoredActivity) -> [Value] {
        let activity = stored.activity
        return [
            .text(stored.stream.app.rawValue), .text(stored.stream.activity.rawValue), .text(activity.state.rawValue),
            .integer(activity.version), .text(activity.activityType), .object(activity.attributes),
            .object(activity.content.contentState), .time(activity.content.staleDate),
            .number(activity.content.relevanceScore?.value), .text(activity.pushType?.rawValue),
            .text(activity.pushToken), .text(activity.deviceID?.rawValue), .time(activity.startDate),
            .time(activity.lastTimestamp), .time(activity.requestedAt), .time(activity.activatedAt),
            .time(activity.endedAt), .time(activity.dismissedAt), .time(activity.dismissalDate),
            .time(stored.nextDeadline?.due), .text(stored.nextDeadline?.kind.rawValue), .time(activity.lastEventAt),
            .text(activity.style?.rawValue), .text(activity.endReason?.rawValue),
            .times(activity.recentHighPriorityUpdates),
        ]
    }

    /// The row as the JSON object `jsonb_populate_record(NULL::activities, …)` reads (in
    /// `liveline_append`, which fills in the stripes).
    static func json(_ stored: StoredActivity) -> JSONB {
        var row = JSONObjectWriter()
        for (name, value) in zip(columnNames, values(stored)) { value.add(name, to: &row) }
        return JSONB(utf8: row.json)
    }

    /// Appends the row to `rows`, in the columns and order of `columnNames`.
    static func copy(_ stored: StoredActivity, into rows: inout CopyTextRows) {
        for value in values(stored) { value.appendField(to: &rows) }
        rows.endRow()
    }
}

import ActivityLifecycle
import CanonicalJSON
package import Postgres

/// The one place that maps an `Activity` to the columns of `activities`: read from the
/// `liveline_activity_rows` view (typed, binary), written as the JSON object that
/// `liveline_append` hands to `jsonb_populate_record`, or as a `COPY` row (replay).
package enum ProjectionRow {
    /// The activity in the columns of `liveline_activity_rows` starting at `offset`, or `nil`
    /// when they are NULL (a left join that found no activity).
    package static func stored(from row: PostgresRow, at offset: Int) throws -> StoredActivity? {
        func column<T: PostgresDecodable>(_ column: Column, as type: T.Type = T.self) throws -> T {
            try row.decode(offset + column.rawValue, as: type)
        }
        func timestamp(_ name: Column) throws -> Timestamp? {
            try column(name, as: PostgresTimestamp?.self).map(Timestamp.init)
        }
        func json(_ name: Column) throws -> JSONObject {
            do {
                return try JSONParser.parseObject(column(name, as: JSONB.self).utf8)
            } catch {
                throw EventStoreError.unreadableRow("activities: \(error)")
            }
        }
        func parsed<T>(_ name: Column, _ make: (String) -> T?) throws -> T? {
            guard let text = try column(name, as: String?.self) else { return nil }
            guard let value = make(text) else { throw EventStoreError.unreadableRow("activities: \"\(text)\"") }
            return value
        }
        func priorityUpdates() throws -> [Timestamp] {
            try column(.priorityUpdates, as: PostgresArray<PostgresTimestamp>.self).elements.map(Timestamp.init)
        }
        guard let app = try parsed(.appID, AppID.init(rawValue:)) else { return nil }
        guard let activityID = try parsed(.activityID, ActivityID.init(rawValue:)),
            let state = try parsed(.state, ActivityState.init(rawValue:)),
            let requestedAt = try timestamp(.requestedAt), let lastEventAt = try timestamp(.lastEventAt)
        else { throw EventStoreError.unreadableRow("activities: missing columns") }
        let deadlineKind = try parsed(.nextDeadlineKind, Deadline.Kind.init(rawValue:))
        let deadlineAt = try timestamp(.nextDeadlineAt)
        let activity = Activity(
            state: state,
            version: try column(.version),
            activityType: try column(.activityType),
            attributes: try json(.attributes),
            content: ActivityContent(
                contentState: try json(.contentState),
                staleDate: try timestamp(.staleDate),
                relevanceScore: try column(.relevanceScore, as: Double?.self).flatMap(RelevanceScore.init)
            ),
            startDate: try timestamp(.startDate),
            pushType: try parsed(.pushType, PushType.init(rawValue:)),
            style: try parsed(.style, ActivityStyle.init(rawValue:)),
            deviceID: try parsed(.deviceID, DeviceID.init(rawValue:)),
            pushToken: try column(.pushToken),
            requestedAt: requestedAt,
            activatedAt: try timestamp(.activatedAt),
            endedAt: try timestamp(.endedAt),
            endReason: try parsed(.endReason, EndReason.init(rawValue:)),
            dismissedAt: try timestamp(.dismissedAt),
            dismissalDate: try timestamp(.dismissalDate),
            lastTimestamp: try timestamp(.lastTimestamp),
            lastEventAt: lastEventAt,
            recentHighPriorityUpdates: try priorityUpdates()
        )
        return StoredActivity(
            stream: StreamID(app: app, activity: activityID),
            activity: activity,
            nextDeadline: deadlineKind.flatMap { kind in deadlineAt.map { Deadline(kind: kind, due: $0) } }
        )
    }

    /// The columns of `liveline_activity_rows`, in order: what `stored(from:at:)` reads and
    /// `json` and `copy` write.
    package enum Column: Int, SQLColumns {
        case appID, activityID, state, version, activityType, attributes, contentState, staleDate
        case relevanceScore, pushType, pushToken, deviceID, startDate, lastTimestamp, requestedAt, activatedAt
        case endedAt, dismissedAt, dismissalDate, nextDeadlineAt, nextDeadlineKind, lastEventAt, style, endReason,
            priorityUpdates

        package var sql: StaticString {
            switch self {
            case .appID: "app_id"
            case .activityID: "activity_id"
            case .state: "state"
            case .version: "version"
            case .activityType: "activity_type"
            case .attributes: "attributes"
            case .contentState: "content_state"
            case .staleDate: "stale_date"
            case .relevanceScore: "relevance_score"
            case .pushType: "push_type"
            case .pushToken: "push_token"
            case .deviceID: "device_id"
            case .startDate: "start_date"
            case .lastTimestamp: "last_timestamp"
            case .requestedAt: "requested_at"
            case .activatedAt: "activated_at"
            case .endedAt: "ended_at"
            case .dismissedAt: "dismissed_at"
            case .dismissalDate: "dismissal_date"
            case .nextDeadlineAt: "next_deadline_at"
            case .nextDeadlineKind: "next_deadline_kind"
            case .lastEventAt: "last_event_at"
            case .style: "style"
            case .endReason: "end_reason"
            case .priorityUpdates: "priority_updates"
            }
        }
    }

    /// The column names, in order, for `COPY`.
    package static let columnNames = columns.map { "\($0.sql)" }

    /// How many columns a row has, for a query that selects columns after them.
    package static var columnCount: Int { columns.count }

    private static let columns = Column.allCases

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

    /// One column's value of the activity's row.
    private static func value(of column: Column, in stored: StoredActivity) -> Value {
        let activity = stored.activity
        return switch column {
        case .appID: .text(stored.stream.app.rawValue)
        case .activityID: .text(stored.stream.activity.rawValue)
        case .state: .text(activity.state.rawValue)
        case .version: .integer(activity.version)
        case .activityType: .text(activity.activityType)
        case .attributes: .object(activity.attributes)
        case .contentState: .object(activity.content.contentState)
        case .staleDate: .time(activity.content.staleDate)
        case .relevanceScore: .number(activity.content.relevanceScore?.value)
        case .pushType: .text(activity.pushType?.rawValue)
        case .pushToken: .text(activity.pushToken)
        case .deviceID: .text(activity.deviceID?.rawValue)
        case .startDate: .time(activity.startDate)
        case .lastTimestamp: .time(activity.lastTimestamp)
        case .requestedAt: .time(activity.requestedAt)
        case .activatedAt: .time(activity.activatedAt)
        case .endedAt: .time(activity.endedAt)
        case .dismissedAt: .time(activity.dismissedAt)
        case .dismissalDate: .time(activity.dismissalDate)
        case .nextDeadlineAt: .time(stored.nextDeadline?.due)
        case .nextDeadlineKind: .text(stored.nextDeadline?.kind.rawValue)
        case .lastEventAt: .time(activity.lastEventAt)
        case .style: .text(activity.style?.rawValue)
        case .endReason: .text(activity.endReason?.rawValue)
        case .priorityUpdates: .times(activity.recentHighPriorityUpdates)
        }
    }

    /// The row as the JSON object `jsonb_populate_record(NULL::activities, …)` reads (in
    /// `liveline_append`, which fills in the stripes).
    package static func json(_ stored: StoredActivity) -> JSONB {
        var row = JSONObjectWriter()
        for column in columns { value(of: column, in: stored).add(columnNames[column.rawValue], to: &row) }
        return JSONB(utf8: row.json)
    }

    /// Appends the row to `rows`, in the columns and order of `columnNames`.
    package static func copy(_ stored: StoredActivity, into rows: inout CopyTextRows) {
        for column in columns { value(of: column, in: stored).appendField(to: &rows) }
        rows.endRow()
    }
}

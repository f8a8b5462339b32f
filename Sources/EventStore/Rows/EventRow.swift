package import ActivityLifecycle
import CanonicalJSON
package import Postgres

/// The one place that reads an event from the columns of `events`: the store's readers and the
/// operators' tools select `EventRow.Column` and decode each row here.
package enum EventRow {
    /// The columns every reader of events selects, in this order: `\(columnsOf: EventRow.Column.self)`.
    package enum Column: Int, SQLColumns {
        case position, appID, activityID, version, type, data, cause, occurredAt, recordedAt

        package var sql: StaticString {
            switch self {
            case .position: "position"
            case .appID: "app_id"
            case .activityID: "activity_id"
            case .version: "version"
            case .type: "type"
            case .data: "data"
            case .cause: "caused_by::text"
            case .occurredAt: "occurred_at"
            case .recordedAt: "recorded_at"
            }
        }
    }

    /// The columns of a row that name its stream (app and activity).
    package static let streamColumns = Column.appID.rawValue...Column.activityID.rawValue

    /// Decodes a row of `columns`.
    package static func storedEvent(_ row: PostgresRow) throws -> StoredEvent {
        try storedEvent(row, of: streamID(row))
    }

    /// The stream of such a row.
    package static func streamID(_ row: PostgresRow) throws -> StreamID {
        guard let app = AppID(rawValue: try row.decode(Column.appID.rawValue)),
            let activity = ActivityID(rawValue: try row.decode(Column.activityID.rawValue))
        else {
            throw EventStoreError.unreadableRow("events at position \(try position(row))")
        }
        return StreamID(app: app, activity: activity)
    }

    /// Such a row, of a stream already decoded (from another row of it).
    package static func storedEvent(_ row: PostgresRow, of stream: StreamID) throws -> StoredEvent {
        guard let cause = try row.decode(Column.cause.rawValue, as: KnownRawValue<Cause>.self).value else {
            throw EventStoreError.unreadableRow("events at position \(try position(row))")
        }
        guard let type = try row.decode(Column.type.rawValue, as: KnownRawValue<EventType>.self).value else {
            throw EventStoreError.unreadableRow(
                "unknown event type \(try row.decode(Column.type.rawValue, as: String.self)) at position \(try position(row))"
            )
        }
        return StoredEvent(
            position: try position(row),
            stream: stream,
            event: ActivityEvent(
                version: try row.decode(Column.version.rawValue),
                occurredAt: Timestamp(try row.decode(Column.occurredAt.rawValue, as: PostgresTimestamp.self)),
                cause: cause,
                payload: try EventData.decode(type: type, data: row.decode(Column.data.rawValue))
            ),
            recordedAt: Timestamp(try row.decode(Column.recordedAt.rawValue, as: PostgresTimestamp.self))
        )
    }

    private static func position(_ row: PostgresRow) throws -> Int64 {
        try row.decode(Column.position.rawValue)
    }
}

import ActivityLifecycle
package import CanonicalJSON
package import Foundation
package import LogArchive
import Postgres

/// Reads events as a partition's archive holds them: the columns of `events`, then
/// `committed_at`, and `sealed` in an archive written since archives were sealed (its `data`
/// redacted, the original sealed beside it).
package struct ArchivedEventColumns: Sendable {
    private let columns: ArchivedColumns

    /// The columns of `header`; throws unless every column an event needs is there.
    package init(header: [String]) throws {
        columns = try ArchivedColumns(
            header: header,
            needing: [
                "position", "app_id", "activity_id", "version", "type", "data", "caused_by", "occurred_at",
                "recorded_at", "committed_at",
            ]
        )
    }

    /// The app and activity ids of a row, read alone (its data not opened).
    package func streamKey(_ fields: [String?]) throws -> [String] {
        let row = columns.row(fields)
        return [try row.text("app_id"), try row.text("activity_id")]
    }

    /// The device a row's sealed run names (`ArchivedRow.sealingDevice`).
    package func sealingDevice(_ fields: [String?]) throws -> UUID? {
        try columns.row(fields).sealingDevice()
    }

    /// The event of a row — its data opened by `unsealer`, which reads the archive's rows in
    /// order, or as written —, when its transaction committed (`nil` when not recorded), and what
    /// became of its sealed data.
    package func decode(
        _ fields: [String?],
        with unsealer: inout ArchiveUnsealer
    ) throws -> (event: StoredEvent, committedAt: Timestamp?, unsealing: Unsealing) {
        let row = columns.row(fields)
        let position: Int64 = try row.number("position")
        let (data, unsealing) = try row.unsealed("data", rowKey: "\(position)", with: &unsealer)
        guard let app = AppID(rawValue: try row.text("app_id")),
            let activity = ActivityID(rawValue: try row.text("activity_id")),
            let type = EventType(rawValue: try row.text("type")), let cause = Cause(rawValue: try row.text("caused_by"))
        else {
            throw ArchivedColumns.Unreadable(description: "a row's stream, type or cause cannot be read")
        }
        return (
            StoredEvent(
                position: position,
                stream: StreamID(app: app, activity: activity),
                event: ActivityEvent(
                    version: try row.number("version"),
                    occurredAt: try row.time("occurred_at"),
                    cause: cause,
                    payload: try EventData.decode(type: type, data: JSONB(data))
                ),
                recordedAt: try row.time("recorded_at")
            ),
            try row.optionalTime("committed_at"),
            unsealing
        )
    }
}

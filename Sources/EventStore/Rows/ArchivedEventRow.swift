import ActivityLifecycle
package import CanonicalJSON
import Postgres

/// Reads events as a partition's archive holds them: CSV rows under the header `COPY` wrote
/// (the columns of `events`, then `committed_at`), times as PostgreSQL writes them in UTC.
package struct ArchivedEventColumns: Sendable {
    /// An archive whose rows cannot be read as events.
    package struct Unreadable: Error, CustomStringConvertible {
        package let description: String
    }

    private let index: [String: Int]

    /// The columns of `header`; throws unless every column an event needs is there.
    package init(header: [String]) throws {
        index = Dictionary(header.enumerated().map { ($1, $0) }) { first, _ in first }
        let needed = ["position", "app_id", "activity_id", "version", "type", "data", "caused_by", "occurred_at"]
        let missing = (needed + ["recorded_at", "committed_at"]).filter { index[$0] == nil }
        guard missing.isEmpty else {
            throw Unreadable(description: "the archive has no column \(missing.joined(separator: ", "))")
        }
    }

    /// The event of a row, and when its transaction committed (`nil` when not recorded).
    package func decode(_ fields: [String?]) throws -> (event: StoredEvent, committedAt: Timestamp?) {
        func text(_ column: String) throws -> String {
            guard let position = index[column], position < fields.count, let value = fields[position] else {
                throw Unreadable(description: "a row has no \(column)")
            }
            return value
        }
        func time(_ column: String) throws -> Timestamp {
            let written = try text(column)
            // PostgreSQL writes the UTC offset as `+00`; RFC 3339 wants `+00:00`.
            guard let time = RFC3339.parse(written.hasSuffix("+00") ? written + ":00" : written) else {
                throw Unreadable(description: "\(column) \(written) is not a time")
            }
            return time
        }
        guard let position = Int64(try text("position")), let version = Int(try text("version")),
            let app = AppID(rawValue: try text("app_id")), let activity = ActivityID(rawValue: try text("activity_id")),
            let type = EventType(rawValue: try text("type")), let cause = Cause(rawValue: try text("caused_by"))
        else {
            throw Unreadable(description: "a row's position, version, stream, type or cause cannot be read")
        }
        let committed = index["committed_at"].flatMap { $0 < fields.count ? fields[$0] : nil }
        return (
            StoredEvent(
                position: position,
                stream: StreamID(app: app, activity: activity),
                event: ActivityEvent(
                    version: version,
                    occurredAt: try time("occurred_at"),
                    cause: cause,
                    payload: try EventData.decode(type: type, data: JSONB(try text("data")))
                ),
                recordedAt: try time("recorded_at")
            ),
            committed == nil ? nil : try time("committed_at")
        )
    }
}

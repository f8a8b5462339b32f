import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of a device's pushes: its activities' deliveries (found by the activities' device) and
/// its reloads, merged newest first.
enum DevicePushQueries {
    static func pushes(to device: DeviceID, of app: AppID, limit: Int, _ connection: Connection) throws -> [DevicePush]
    {
        let activities = try connection.query(
            """
            SELECT a.activity_id, e.version, d.outcome, d.attempt, d.apns_id::text,
                coalesce(d.device_token, lower(t.data ->> 'pushToken')) AS device_token, d.channel_id,
                d.priority::int, d.status, d.reason, d.latency_us, d.attempted_at
            FROM activities a
            JOIN events e ON e.app_id = a.app_id AND e.activity_id = a.activity_id
                AND e.stream_recorded_at = a.stream_recorded_at
            JOIN deliveries d ON d.position = e.position AND d.recorded_at >= e.stream_recorded_at
            LEFT JOIN events t ON t.position = d.token_position AND t.stream_recorded_at = a.stream_recorded_at
            WHERE a.app_id = \(app.rawValue) AND a.device_id = \(device.rawValue)
            ORDER BY d.attempted_at DESC LIMIT \(literal: limit)
            """
        ).map { row in
            try push(
                row,
                from: .activity(
                    ActivityID(uncheckedRawValue: try row.decode("activity_id")),
                    version: try row.decode("version")
                )
            )
        }
        let reloads = try connection.query(
            """
            SELECT reload_id, push_type, control_kind, outcome, attempt, apns_id::text, device_token,
                NULL::text AS channel_id, priority::int, status, reason, latency_us, attempted_at
            FROM reload_deliveries
            WHERE app_id = \(app.rawValue) AND device_id = \(device.rawValue)
            ORDER BY id DESC LIMIT \(literal: limit)
            """
        ).map { row in
            guard
                let kind = ReloadKind(
                    pushType: try row.decode("push_type"),
                    controlKind: try row.decode("control_kind")
                )
            else { throw EventStoreError.unreadableRow("reload_deliveries: a kind") }
            return try push(row, from: .reload(try row.decode("reload_id"), kind))
        }
        return Array((activities + reloads).sorted { $0.attemptedAt > $1.attemptedAt }.prefix(limit))
    }

    private static func push(_ row: PostgresRow, from source: DevicePush.Source) throws -> DevicePush {
        DevicePush(
            source: source,
            outcome: try row.decode("outcome"),
            attempt: try row.decode("attempt"),
            apnsID: try row.decode("apns_id"),
            deviceToken: try row.decode("device_token"),
            channelID: try row.decode("channel_id"),
            priority: try row.decode("priority", as: Int?.self).flatMap(Priority.init(rawValue:)),
            status: try row.decode("status"),
            reason: try row.decode("reason"),
            latency: try row.decode("latency_us", as: Int64?.self).map { .microseconds($0) },
            attemptedAt: Timestamp(try row.decode("attempted_at", as: PostgresTimestamp.self))
        )
    }
}

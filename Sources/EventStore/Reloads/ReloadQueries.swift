import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of reload requests: accepting one (counting its devices and noting the delivery
/// shards its fan-out walks), and reading where one stands.
enum ReloadQueries {
    /// Accepts a request: one row of `reload_requests`, a row of `reload_fanouts` per shard that
    /// holds a device it targets, and the announcement to the workers — in one statement. A request
    /// under an idempotency key it has seen replays the first answer.
    static func request(
        _ target: ReloadTarget,
        for app: AppID,
        from source: ReloadSource,
        _ connection: Connection
    ) throws -> AcceptedReload {
        var idempotency: IdempotencyKey? = nil
        var activity: (id: String, version: Int)? = nil
        switch source {
        case .api(let key): idempotency = key
        case .activity(let stream, let version): activity = (stream.activity.rawValue, version)
        }
        if let idempotency {
            try connection.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(\("liveline_reload \(app) \(idempotency.key)"), 0))"
            )
            if let earlier = try connection.query(
                """
                SELECT id, targets, requested_at, request_sha256 FROM reload_requests
                WHERE app_id = \(app.rawValue) AND idempotency_key = \(idempotency.key)
                """
            ).single {
                guard try earlier.decode("request_sha256", as: [UInt8].self) == idempotency.requestDigest else {
                    throw EventStoreError.idempotencyKeyReused(key: idempotency.key)
                }
                return try accepted(earlier, app: app, target: target, isReplay: true)
            }
        }
        let widgetKinds = target.widgetKinds.map(PostgresArray.init)
        let devices = target.devices.map { PostgresArray($0.map(\.rawValue)) }
        let row = try connection.query(
            """
            WITH targeted AS (
                SELECT shard, count(*) AS devices FROM reload_tokens
                WHERE app_id = \(app.rawValue) AND push_type = \(target.kind.pushType)
                    AND control_kind = \(target.kind.controlKind)
                    AND (\(widgetKinds)::text[] IS NULL OR widget_kinds && \(widgetKinds)::text[])
                    AND (\(devices)::text[] IS NULL OR device_id = ANY (\(devices)::text[]))
                GROUP BY shard
            ), request AS (
                INSERT INTO reload_requests (app_id, push_type, control_kind, widget_kinds, device_ids, activity_id,
                    version, idempotency_key, request_sha256, targets)
                SELECT \(app.rawValue), \(target.kind.pushType), \(target.kind.controlKind), \(widgetKinds),
                    \(devices), \(activity?.id), \(activity?.version), \(idempotency?.key),
                    \(idempotency?.requestDigest), coalesce((SELECT sum(devices) FROM targeted), 0)
                ON CONFLICT (app_id, activity_id, version) WHERE activity_id IS NOT NULL DO NOTHING
                RETURNING id, targets, requested_at
            ), fanouts AS (
                INSERT INTO reload_fanouts (shard, reload_id) SELECT t.shard, r.id FROM targeted t, request r
            ), announced AS (
                SELECT pg_notify(\(AppendListener.reloadsChannel), '') FROM request
            )
            SELECT id, targets, requested_at FROM request, announced
            """
        ).single
        if let row { return try accepted(row, app: app, target: target, isReplay: false) }
        // An activity's event asked for it before (a worker that took the shard over asks again).
        guard let activity,
            let earlier = try connection.query(
                """
                SELECT id, targets, requested_at FROM reload_requests
                WHERE app_id = \(app.rawValue) AND activity_id = \(activity.id) AND version = \(activity.version)
                """
            ).single
        else { throw EventStoreError.unreadableRow("reload_requests: a request refused without a reason") }
        return try accepted(earlier, app: app, target: target, isReplay: true)
    }

    private static func accepted(
        _ row: PostgresRow,
        app: AppID,
        target: ReloadTarget,
        isReplay: Bool
    ) throws -> AcceptedReload {
        AcceptedReload(
            id: try row.decode("id"),
            app: app,
            target: target,
            targets: try row.decode("targets"),
            requestedAt: Timestamp(try row.decode("requested_at", as: PostgresTimestamp.self)),
            isReplay: isReplay
        )
    }

    /// The app's request `id` with its devices counted by their latest outcome; `nil` when the
    /// app has no such request.
    static func status(of id: Int64, app: AppID, _ connection: Connection) throws -> ReloadStatus? {
        let rows = try connection.query(
            """
            SELECT r.id, r.push_type, r.control_kind, r.widget_kinds, r.device_ids, r.activity_id, r.version,
                r.targets, r.requested_at,
                NOT EXISTS (SELECT FROM reload_fanouts f WHERE f.reload_id = r.id) AS fanned_out,
                p.outcome, p.devices
            FROM reload_requests r
            LEFT JOIN LATERAL (
                SELECT outcome, count(*) AS devices FROM (
                    SELECT DISTINCT ON (device_id) outcome FROM reload_deliveries
                    WHERE reload_id = r.id ORDER BY device_id, id DESC
                ) AS latest GROUP BY outcome
            ) AS p ON true
            WHERE r.id = \(id) AND r.app_id = \(app.rawValue)
            """
        )
        guard let first = rows.first else { return nil }
        guard
            let kind = ReloadKind(
                pushType: try first.decode("push_type"),
                controlKind: try first.decode("control_kind")
            )
        else { throw EventStoreError.unreadableRow("reload_requests \(id): its kind") }
        let target = ReloadTarget(
            kind: kind,
            widgetKinds: try first.decode("widget_kinds", as: PostgresArray<String>?.self)?.elements,
            devices: try first.decode("device_ids", as: PostgresArray<String>?.self)?.elements.map {
                DeviceID(uncheckedRawValue: $0)
            }
        )
        var devices: [String: Int] = [:]
        for row in rows {
            if let outcome = try row.decode("outcome", as: String?.self) {
                devices[outcome] = Int(try row.decode("devices", as: Int64.self))
            }
        }
        return ReloadStatus(
            reload: try accepted(first, app: app, target: target, isReplay: false),
            activity: try first.decode("activity_id", as: String?.self).map { ActivityID(uncheckedRawValue: $0) },
            version: try first.decode("version"),
            fannedOut: try first.decode("fanned_out"),
            devices: devices
        )
    }

    /// The requests an activity's events asked for, in event order, each with its progress.
    static func asked(by stream: StreamID, _ connection: Connection) throws -> [ReloadStatus] {
        try connection.query(
            """
            SELECT id FROM reload_requests
            WHERE app_id = \(stream.app.rawValue) AND activity_id = \(stream.activity.rawValue)
            ORDER BY version
            """
        ).compactMap { row in try status(of: try row.decode("id"), app: stream.app, connection) }
    }
}

import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of the audit trail of administrative changes, which triggers write.
enum AdminChangeQueries {
    static func nameActor(_ actor: AdminActor, _ connection: Connection) throws {
        try connection.execute("SELECT set_config('liveline.actor', \(actor.rawValue), true)")
    }

    static func adminChanges(of app: AppID?, limit: Int, _ connection: Connection) throws -> [AdminChange] {
        try connection.query(
            """
            SELECT id, occurred_at, actor, action, app_id, details FROM admin_changes
            WHERE \(app?.rawValue)::text IS NULL OR app_id = \(app?.rawValue) OR app_id IS NULL
            ORDER BY id DESC LIMIT \(limit)
            """
        ).map { row in
            AdminChange(
                id: try row.decode("id"),
                occurredAt: Timestamp(try row.decode("occurred_at", as: PostgresTimestamp.self)),
                actor: try row.decode("actor"),
                action: try row.decode("action"),
                app: try row.decode("app_id", as: String?.self).map(AppID.init(uncheckedRawValue:)),
                details: try JSONParser.parseObject(row.decode("details", as: JSONB.self).utf8)
            )
        }
    }
}

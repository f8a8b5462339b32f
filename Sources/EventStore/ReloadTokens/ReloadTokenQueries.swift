import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of widget and control tokens: changes appended to `reload_token_changes`, and in the
/// same transaction the slot's row of `reload_tokens`, the token reloads go to now.
enum ReloadTokenQueries {
    /// How many of a slot's latest changes are read back.
    static let historyLimit = 50

    /// Serialises the changes of one slot until the transaction ends, so that the current row
    /// always follows its newest change.
    static func lock(_ slot: ReloadTokenSlot, _ connection: Connection) throws {
        let key = "liveline_reload_token \(slot.app) \(slot.device) \(slot.kind.pushType) \(slot.kind.controlKind)"
        try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended(\(key), 0))")
    }

    /// Appends a registration of `token` with `widgets` (canonical; empty for a control) and makes
    /// it the slot's current token, unless it is that already with the same widgets; `true` when
    /// it appended one. Run under `lock`.
    static func register(
        _ token: String,
        widgets: [WidgetInfo],
        for slot: ReloadTokenSlot,
        _ connection: Connection
    ) throws -> Bool {
        let listed: JSONB? = slot.kind == .widgets ? WidgetInfo.json(widgets) : nil
        let kinds = Array(Set(widgets.map(\.kind))).sorted()
        return try connection.execute(
            """
            WITH current AS (
                SELECT t.token, c.widgets FROM reload_tokens t JOIN reload_token_changes c ON c.id = t.change_id
                WHERE \(key: slot, in: "t")
            ), change AS (
                INSERT INTO reload_token_changes (app_id, device_id, push_type, control_kind, change, token, widgets)
                SELECT \(slot.app.rawValue), \(slot.device.rawValue), \(slot.kind.pushType), \(slot.kind.controlKind),
                    'registered', \(token), \(listed)
                WHERE NOT EXISTS (SELECT FROM current WHERE token = \(token) AND widgets IS NOT DISTINCT FROM \(listed))
                RETURNING id, changed_at
            )
            INSERT INTO reload_tokens (app_id, push_type, control_kind, shard, device_id, token, widget_kinds,
                registered_at, change_id)
            SELECT \(slot.app.rawValue), \(slot.kind.pushType), \(slot.kind.controlKind), \(Self.shard(slot)),
                \(slot.device.rawValue), \(token), \(PostgresArray(kinds)), changed_at, id
            FROM change
            ON CONFLICT (app_id, push_type, control_kind, shard, device_id) DO UPDATE
                SET token = excluded.token, widget_kinds = excluded.widget_kinds,
                    registered_at = excluded.registered_at, change_id = excluded.change_id
            """
        ) == 1
    }

    /// Appends a removal when the slot has a current token, which goes; `false` when it had none.
    /// Run under `lock`.
    static func remove(_ slot: ReloadTokenSlot, _ connection: Connection) throws -> Bool {
        try connection.execute(
            """
            WITH gone AS (DELETE FROM reload_tokens WHERE \(key: slot) RETURNING app_id, device_id, push_type, control_kind)
            INSERT INTO reload_token_changes (app_id, device_id, push_type, control_kind, change)
            SELECT app_id, device_id, push_type, control_kind, 'removed' FROM gone
            """
        ) == 1
    }

    /// The slot's current token and its latest changes, in one statement (one snapshot); `nil`
    /// when it never had a token.
    static func token(of slot: ReloadTokenSlot, _ connection: Connection) throws -> ReloadToken? {
        let rows = try connection.query(
            """
            SELECT change.change, change.token, change.widgets, change.status, change.reason,
                change.invalid_since, change.changed_at, current.token AS current_token,
                current.registered_at, current_change.widgets AS current_widgets
            FROM (
                SELECT * FROM reload_token_changes
                WHERE app_id = \(slot.app.rawValue) AND device_id = \(slot.device.rawValue)
                    AND push_type = \(slot.kind.pushType) AND control_kind = \(slot.kind.controlKind)
                ORDER BY id DESC LIMIT \(literal: historyLimit)
            ) AS change
            LEFT JOIN reload_tokens AS current ON \(key: slot, in: "current")
            LEFT JOIN reload_token_changes AS current_change ON current_change.id = current.change_id
            ORDER BY change.id
            """
        )
        guard let first = rows.first else { return nil }
        let current = try first.decode("current_token", as: String?.self).map { token in
            ReloadToken.Registration(
                token: token,
                widgets: try first.decode("current_widgets", as: JSONB?.self).map { try WidgetInfo.list($0) } ?? [],
                registeredAt: Timestamp(try first.decode("registered_at", as: PostgresTimestamp.self))
            )
        }
        return ReloadToken(slot: slot, current: current, changes: try rows.map(TokenChange.init(row:)))
    }

    static func shard(_ slot: ReloadTokenSlot) -> Int {
        DeliveryShard.of(slot.app, device: slot.device)
    }
}

extension PostgresQuery.StringInterpolation {
    /// `reload_tokens`' key columns equal to the slot's: `app_id = $n AND …`, each prefixed with
    /// `table` (`current.`) when given.
    mutating func appendInterpolation(key slot: ReloadTokenSlot, in table: StaticString = "") {
        let prefix = table.description.isEmpty ? "" : "\(table)."
        appendLiteral("\(prefix)app_id = ")
        appendInterpolation(slot.app.rawValue)
        appendLiteral(" AND \(prefix)push_type = ")
        appendInterpolation(slot.kind.pushType)
        appendLiteral(" AND \(prefix)control_kind = ")
        appendInterpolation(slot.kind.controlKind)
        appendLiteral(" AND \(prefix)shard = ")
        appendInterpolation(ReloadTokenQueries.shard(slot))
        appendLiteral(" AND \(prefix)device_id = ")
        appendInterpolation(slot.device.rawValue)
    }
}

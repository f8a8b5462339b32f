import Postgres

/// What `liveline verify` checks of widget and control reloads: each slot of `reload_tokens` is
/// what `reload_token_changes` says it is, and every outcome in `reload_deliveries` belongs to a
/// request of its app.
public struct ReloadCheck: Hashable, Sendable, Encodable {
    /// Slots that hold a token, as the changes have them.
    public var slots = 0
    public var requests = 0
    public var outcomes = 0
    /// What does not hold, a line each (at most `ReloadCheckQueries.limit` of each kind).
    public var problems: [String] = []

    public init() {}
}

enum ReloadCheckQueries {
    static let limit = 100

    static func check(_ connection: Connection) throws -> ReloadCheck {
        var check = ReloadCheck()
        // A slot holds the token of its latest registration, unless it was removed since, or
        // APNs declared that token dead at or after it was registered.
        let rows = try connection.query(
            """
            WITH latest AS (
                SELECT DISTINCT ON (app_id, push_type, control_kind, device_id) *
                FROM reload_token_changes WHERE change IN ('registered', 'removed')
                ORDER BY app_id, push_type, control_kind, device_id, id DESC
            ), expected AS (
                SELECT l.* FROM latest l
                WHERE l.change = 'registered' AND NOT EXISTS (
                    SELECT FROM reload_token_changes i
                    WHERE i.app_id = l.app_id AND i.push_type = l.push_type AND i.control_kind = l.control_kind
                        AND i.device_id = l.device_id AND i.change = 'invalidated' AND i.id > l.id
                        AND i.token = l.token AND i.invalid_since >= l.changed_at)
            )
            SELECT coalesce(e.app_id, t.app_id) AS app_id, coalesce(e.push_type, t.push_type) AS push_type,
                coalesce(e.control_kind, t.control_kind) AS control_kind,
                coalesce(e.device_id, t.device_id) AS device_id, e.id AS expected_change, t.change_id AS held_change,
                (e.id IS NOT NULL AND t.change_id IS NOT NULL AND e.id = t.change_id
                    AND e.token = t.token) AS agrees,
                count(*) OVER () AS slots
            FROM expected e
            FULL JOIN reload_tokens t ON t.app_id = e.app_id AND t.push_type = e.push_type
                AND t.control_kind = e.control_kind AND t.device_id = e.device_id
            """
        )
        for row in rows where !(try row.decode("agrees", as: Bool.self)) {
            guard check.problems.count < limit else { break }
            let kind = try row.decode("control_kind", as: String.self)
            let slot =
                "\(try row.decode("app_id", as: String.self)) \(try row.decode("push_type", as: String.self))"
                + (kind.isEmpty ? "" : " \(kind)") + " on \(try row.decode("device_id", as: String.self))"
            let expected = try row.decode("expected_change", as: Int64?.self)
            let held = try row.decode("held_change", as: Int64?.self)
            check.problems.append(
                "reload_tokens: \(slot) holds "
                    + (held.map { "the token of change \($0)" } ?? "no token")
                    + ", its changes say "
                    + (expected.map { "the token of change \($0)" } ?? "none")
            )
        }
        check.slots = try rows.count { try $0.decode("held_change", as: Int64?.self) != nil }
        let counts = try connection.query(
            "SELECT (SELECT count(*) FROM reload_requests) AS requests, (SELECT count(*) FROM reload_deliveries) AS outcomes"
        ).single!
        check.requests = Int(try counts.decode("requests", as: Int64.self))
        check.outcomes = Int(try counts.decode("outcomes", as: Int64.self))
        for row in try connection.query(
            """
            SELECT d.reload_id, d.app_id, count(*) AS outcomes FROM reload_deliveries d
            WHERE NOT EXISTS (SELECT FROM reload_requests r WHERE r.id = d.reload_id AND r.app_id = d.app_id)
            GROUP BY 1, 2 ORDER BY 1 LIMIT \(literal: limit)
            """
        ) {
            check.problems.append(
                "reload_deliveries: \(try row.decode("outcomes", as: Int64.self)) outcomes of reload "
                    + "\(try row.decode("reload_id", as: Int64.self)) of \(try row.decode("app_id", as: String.self)), "
                    + "which has no such request"
            )
        }
        return check
    }
}

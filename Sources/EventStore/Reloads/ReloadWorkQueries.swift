import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of the reload workers: the reloads due taken, the fan-outs walked a page at a time,
/// the outcomes recorded.
///
/// Nothing is written for a reload as it leaves: the worker that sent it knows it is on its way
/// (and says so to `take`), a fan-out's cursor moves past a page only when `record` writes its
/// outcomes, and a slot's due reload stays written until its answer is recorded. When a device
/// last had a reload is read from `reload_deliveries`. A slot's due time is written only by the
/// worker holding its shard's lease, and a registration writes only the token's columns, so the
/// rows are read without locking them (a row lock is a write).
enum ReloadWorkQueries {
    /// A slot's row of `reload_tokens`, with its due reload.
    struct Slot {
        let slot: ReloadTokenSlot
        let shard: Int
        let token: String
        var due: ReloadPacing.Due?

        /// The columns a `Slot` is read from, `t` being `reload_tokens`.
        enum Column: Int, SQLColumns {
            case app, pushType, controlKind, shard, device, token, dueReload, dueAt, dueAttempt

            var sql: StaticString {
                switch self {
                case .app: "t.app_id"
                case .pushType: "t.push_type"
                case .controlKind: "t.control_kind"
                case .shard: "t.shard"
                case .device: "t.device_id"
                case .token: "t.token"
                case .dueReload: "t.due_reload"
                case .dueAt: "t.due_at"
                case .dueAttempt: "t.due_attempt"
                }
            }
        }

        init(_ row: PostgresRow) throws {
            guard
                let kind = ReloadKind(
                    pushType: try row.decode("push_type"),
                    controlKind: try row.decode("control_kind")
                )
            else { throw EventStoreError.unreadableRow("reload_tokens: a kind") }
            slot = ReloadTokenSlot(
                app: AppID(uncheckedRawValue: try row.decode("app_id")),
                device: DeviceID(uncheckedRawValue: try row.decode("device_id")),
                kind: kind
            )
            shard = try row.decode("shard")
            token = try row.decode("token")
            due = try Self.due(row)
        }

        /// The row's due reload, if it has one.
        static func due(_ row: PostgresRow) throws -> ReloadPacing.Due? {
            try row.decode("due_reload", as: Int64?.self).map { reload in
                ReloadPacing.Due(
                    reload: reload,
                    attempt: try row.decode("due_attempt"),
                    at: Timestamp(try row.decode("due_at", as: PostgresTimestamp.self))
                )
            }
        }
    }

    /// Writes the slots' due reloads.
    static func write(
        _ dues: [(slot: ReloadTokenSlot, shard: Int, due: ReloadPacing.Due?)],
        _ connection: Connection
    ) throws {
        guard !dues.isEmpty else { return }
        try connection.execute(
            """
            UPDATE reload_tokens t SET due_reload = u.due_reload, due_at = u.due_at, due_attempt = u.due_attempt
            FROM unnest(\(PostgresArray(dues.map(\.slot.app.rawValue))), \(PostgresArray(dues.map(\.slot.kind.pushType))),
                \(PostgresArray(dues.map(\.slot.kind.controlKind))), \(PostgresArray(dues.map(\.shard))),
                \(PostgresArray(dues.map(\.slot.device.rawValue))), \(PostgresArray(dues.map { $0.due?.reload })),
                \(PostgresArray(dues.map { $0.due.map { PostgresTimestamp($0.at) } })),
                \(PostgresArray(dues.map { $0.due?.attempt ?? 0 })))
                AS u(app_id, push_type, control_kind, shard, device_id, due_reload, due_at, due_attempt)
            WHERE t.app_id = u.app_id AND t.push_type = u.push_type AND t.control_kind = u.control_kind
                AND t.shard = u.shard AND t.device_id = u.device_id
            """
        )
    }

    /// Appends the outcomes to `reload_deliveries`.
    static func insert(_ outcomes: [ReloadOutcome], _ connection: Connection) throws {
        guard !outcomes.isEmpty else { return }
        try connection.execute(
            """
            INSERT INTO reload_deliveries (reload_id, app_id, device_id, push_type, control_kind, outcome, attempt,
                apns_id, device_token, priority, status, reason, latency_us, attempted_at)
            SELECT * FROM unnest(
                \(PostgresArray(outcomes.map(\.send.reload))), \(PostgresArray(outcomes.map(\.send.slot.app.rawValue))),
                \(PostgresArray(outcomes.map(\.send.slot.device.rawValue))),
                \(PostgresArray(outcomes.map(\.send.slot.kind.pushType))),
                \(PostgresArray(outcomes.map(\.send.slot.kind.controlKind))),
                \(PostgresArray(outcomes.map(\.kind.rawValue))), \(PostgresArray(outcomes.map(\.send.attempt))),
                \(PostgresArray(outcomes.map(\.apnsID)))::uuid[], \(PostgresArray(outcomes.map(\.send.token))),
                \(PostgresArray(outcomes.map { $0.priority?.rawValue }))::smallint[],
                \(PostgresArray(outcomes.map(\.status))), \(PostgresArray(outcomes.map(\.reason))),
                \(PostgresArray(outcomes.map { $0.latency?.microseconds })),
                \(PostgresArray(outcomes.map { PostgresTimestamp($0.attemptedAt) })))
            """
        )
    }

    /// Gives `worker`'s reload shards among `shards` up.
    static func release(_ shards: Set<Int>, by worker: String, _ connection: Connection) throws {
        try connection.execute(
            """
            UPDATE reload_shards SET owner = NULL, lease_expires_at = NULL
            WHERE shard = ANY (\(PostgresArray(shards.sorted()))) AND owner = \(worker)
            """
        )
    }
}

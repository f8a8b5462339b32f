import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of the reload workers: the slots' pacing read and written back around
/// `ReloadPacing`'s decisions, the fan-outs walked page by page, the outcomes recorded.
///
/// A slot's pacing is written only by the worker that holds its shard's lease, and a
/// registration writes only the token's columns (an `UPDATE` names its columns, so neither
/// overwrites the other's): the rows are read without locking them, since a row lock is a write.
enum ReloadWorkQueries {
    /// A slot's row of `reload_tokens` with its pacing, and the app's interval for its kind.
    struct Slot {
        let slot: ReloadTokenSlot
        let shard: Int
        let token: String
        var pacing: ReloadPacing
        let interval: Duration

        /// The columns a `Slot` is read from, `t` being `reload_tokens` and `a` `apps`.
        enum Column: Int, SQLColumns {
            case app, pushType, controlKind, shard, device, token, lastSentAt, dueReload, dueAt, dueAttempt
            case sendingReload, sendingAttempt, interval

            var sql: StaticString {
                switch self {
                case .app: "t.app_id"
                case .pushType: "t.push_type"
                case .controlKind: "t.control_kind"
                case .shard: "t.shard"
                case .device: "t.device_id"
                case .token: "t.token"
                case .lastSentAt: "t.last_sent_at"
                case .dueReload: "t.due_reload"
                case .dueAt: "t.due_at"
                case .dueAttempt: "t.due_attempt"
                case .sendingReload: "t.sending_reload"
                case .sendingAttempt: "t.sending_attempt"
                case .interval:
                    """
                    CASE WHEN t.push_type = 'widgets' THEN a.widget_reload_interval_seconds
                        ELSE a.control_reload_interval_seconds END AS interval_seconds
                    """
                }
            }
        }

        init(_ row: PostgresRow) throws {
            let app = AppID(uncheckedRawValue: try row.decode("app_id"))
            guard
                let kind = ReloadKind(
                    pushType: try row.decode("push_type"),
                    controlKind: try row.decode("control_kind")
                )
            else { throw EventStoreError.unreadableRow("reload_tokens: a kind") }
            let device = DeviceID(uncheckedRawValue: try row.decode("device_id"))
            slot = ReloadTokenSlot(app: app, device: device, kind: kind)
            shard = try row.decode("shard")
            token = try row.decode("token")
            func time(_ column: String) throws -> Timestamp? {
                try row.decode(column, as: PostgresTimestamp?.self).map(Timestamp.init)
            }
            let due: ReloadPacing.Due? = try row.decode("due_reload", as: Int64?.self).map { reload in
                ReloadPacing.Due(reload: reload, attempt: try row.decode("due_attempt"), at: try time("due_at")!)
            }
            let sending: ReloadPacing.Sending? = try row.decode("sending_reload", as: Int64?.self).map {
                ReloadPacing.Sending(reload: $0, attempt: try row.decode("sending_attempt"))
            }
            pacing = ReloadPacing(lastSentAt: try time("last_sent_at"), due: due, sending: sending)
            interval = .seconds(try row.decode("interval_seconds", as: Int.self))
        }

        func send(_ sending: ReloadPacing.Sending) -> ReloadSend {
            ReloadSend(slot: slot, token: token, reload: sending.reload, attempt: sending.attempt)
        }
    }

    /// Takes the reloads due in `shards` (up to `limit`), then walks the fan-outs there a page at a
    /// time with what room is left: each device is sent the reload or coalesced, as its pacing
    /// says; pacing, coalesced outcomes and cursors are written in the same transaction. Apps in
    /// `paused` are left alone.
    static func take(
        in shards: Set<Int>,
        paused: Set<AppID>,
        limit: Int,
        now: Timestamp,
        _ connection: Connection
    ) throws -> ReloadWork {
        let held = PostgresArray(shards.sorted())
        let skipped = PostgresArray(paused.map(\.rawValue).sorted())
        return try connection.transaction { connection in
            var slots: [ReloadTokenSlot: Slot] = [:]
            var order: [ReloadTokenSlot] = []
            func keep(_ slot: Slot) {
                if slots.updateValue(slot, forKey: slot.slot) == nil { order.append(slot.slot) }
            }
            var sends: [ReloadSend] = []
            var coalesced: [(ReloadSend, Timestamp)] = []
            for row in try connection.query(
                """
                SELECT \(columnsOf: Slot.Column.self) FROM reload_tokens t JOIN apps a ON a.app_id = t.app_id
                WHERE t.shard = ANY (\(held)) AND t.due_at <= \(PostgresTimestamp(now)) AND t.sending_reload IS NULL
                    AND t.app_id <> ALL (\(skipped))
                ORDER BY t.due_at LIMIT \(literal: limit)
                """
            ) {
                var slot = try Slot(row)
                guard let sending = slot.pacing.takeDue(at: now) else { continue }
                sends.append(slot.send(sending))
                keep(slot)
            }
            var moreWaiting = sends.count == limit
            var room = limit - sends.count
            let fanouts = try connection.query(
                """
                SELECT f.shard, f.reload_id, f.after_device, r.app_id, r.push_type, r.control_kind,
                    r.widget_kinds, r.device_ids
                FROM reload_fanouts f JOIN reload_requests r ON r.id = f.reload_id
                WHERE f.shard = ANY (\(held)) AND r.app_id <> ALL (\(skipped))
                ORDER BY f.reload_id, f.shard LIMIT 64
                FOR UPDATE OF f SKIP LOCKED
                """
            )
            for fanout in fanouts {
                guard room > 0 else {
                    moreWaiting = true
                    break
                }
                let reload = try fanout.decode("reload_id", as: Int64.self)
                let shard = try fanout.decode("shard", as: Int.self)
                let asked = room
                let page = try Self.page(of: fanout, limit: asked, connection)
                for row in page {
                    let read = try Slot(row)
                    var slot = slots[read.slot] ?? read
                    switch slot.pacing.request(reload, at: now, interval: slot.interval) {
                    case .send(let sending): sends.append(slot.send(sending))
                    case .coalesce(let until):
                        let send = ReloadSend(slot: slot.slot, token: slot.token, reload: reload, attempt: 0)
                        coalesced.append((send, until))
                    }
                    keep(slot)
                }
                room -= page.count
                if page.count < asked {
                    try connection.execute(
                        "DELETE FROM reload_fanouts WHERE shard = \(shard) AND reload_id = \(reload)"
                    )
                } else {
                    moreWaiting = true
                    try connection.execute(
                        """
                        UPDATE reload_fanouts SET after_device = \(try page.last!.decode("device_id", as: String.self))
                        WHERE shard = \(shard) AND reload_id = \(reload)
                        """
                    )
                }
            }
            try write(order.map { slots[$0]! }, connection)
            try insert(
                coalesced.map { ReloadOutcome(send: $0.0, kind: .coalesced, retryAt: $0.1, attemptedAt: now) },
                connection
            )
            let nextDue = try connection.query(
                """
                SELECT min(due_at) AS next FROM reload_tokens
                WHERE shard = ANY (\(held)) AND due_at IS NOT NULL AND sending_reload IS NULL
                    AND app_id <> ALL (\(skipped))
                """
            ).single?.decode("next", as: PostgresTimestamp?.self).map(Timestamp.init)
            return ReloadWork(sends: sends, nextDue: nextDue, moreWaiting: moreWaiting)
        }
    }

    /// The next devices of a fan-out (a row of `reload_fanouts` with its request's), in key
    /// order after its cursor: the named devices one by one, or every device of the app
    /// that has the kind (and one of the widget kinds named).
    private static func page(of fanout: PostgresRow, limit: Int, _ connection: Connection) throws -> PostgresRows {
        let app = try fanout.decode("app_id", as: String.self)
        let pushType = try fanout.decode("push_type", as: String.self)
        let controlKind = try fanout.decode("control_kind", as: String.self)
        let shard = try fanout.decode("shard", as: Int.self)
        let after = try fanout.decode("after_device", as: String.self)
        let widgetKinds = try fanout.decode("widget_kinds", as: PostgresArray<String>?.self)
        if let devices = try fanout.decode("device_ids", as: PostgresArray<String>?.self) {
            return try connection.query(
                """
                SELECT \(columnsOf: Slot.Column.self)
                FROM unnest(\(devices)::text[]) AS d(device_id)
                JOIN reload_tokens t ON t.app_id = \(app) AND t.push_type = \(pushType)
                    AND t.control_kind = \(controlKind) AND t.shard = \(shard) AND t.device_id = d.device_id
                JOIN apps a ON a.app_id = t.app_id
                WHERE d.device_id > \(after) AND (\(widgetKinds)::text[] IS NULL OR t.widget_kinds && \(widgetKinds)::text[])
                ORDER BY t.device_id LIMIT \(literal: limit)
                """
            )
        }
        return try connection.query(
            """
            SELECT \(columnsOf: Slot.Column.self) FROM reload_tokens t JOIN apps a ON a.app_id = t.app_id
            WHERE t.app_id = \(app) AND t.push_type = \(pushType) AND t.control_kind = \(controlKind)
                AND t.shard = \(shard) AND t.device_id > \(after)
                AND (\(widgetKinds)::text[] IS NULL OR t.widget_kinds && \(widgetKinds)::text[])
            ORDER BY t.device_id LIMIT \(literal: limit)
            """
        )
    }

    /// Writes the slots' pacing back.
    private static func write(_ slots: [Slot], _ connection: Connection) throws {
        guard !slots.isEmpty else { return }
        func times(_ value: (Slot) -> Timestamp?) -> PostgresArray<PostgresTimestamp?> {
            PostgresArray(slots.map { value($0).map(PostgresTimestamp.init) })
        }
        try connection.execute(
            """
            UPDATE reload_tokens t SET last_sent_at = u.last_sent_at, due_reload = u.due_reload, due_at = u.due_at,
                due_attempt = u.due_attempt, sending_reload = u.sending_reload, sending_attempt = u.sending_attempt
            FROM unnest(\(PostgresArray(slots.map(\.slot.app.rawValue))), \(PostgresArray(slots.map(\.slot.kind.pushType))),
                \(PostgresArray(slots.map(\.slot.kind.controlKind))), \(PostgresArray(slots.map(\.shard))),
                \(PostgresArray(slots.map(\.slot.device.rawValue))), \(times { $0.pacing.lastSentAt }),
                \(PostgresArray(slots.map { $0.pacing.due?.reload })), \(times { $0.pacing.due?.at }),
                \(PostgresArray(slots.map { $0.pacing.due?.attempt ?? 0 })),
                \(PostgresArray(slots.map { $0.pacing.sending?.reload })),
                \(PostgresArray(slots.map { $0.pacing.sending?.attempt ?? 0 })))
                AS u(app_id, push_type, control_kind, shard, device_id, last_sent_at, due_reload, due_at, due_attempt,
                    sending_reload, sending_attempt)
            WHERE t.app_id = u.app_id AND t.push_type = u.push_type AND t.control_kind = u.control_kind
                AND t.shard = u.shard AND t.device_id = u.device_id
            """
        )
    }

    /// Appends the outcomes to `reload_deliveries`.
    private static func insert(_ outcomes: [ReloadOutcome], _ connection: Connection) throws {
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

    /// Records what became of reloads sent: each slot still sending that reload settles (done, or
    /// due again at `retryAt`), the outcomes are appended, dead tokens leave their slots (unless
    /// registered after APNs' time) with the change kept, and suspensions are recorded.
    static func record(_ outcomes: [ReloadOutcome], suspensions: [Suspension], _ connection: Connection) throws {
        try connection.transaction { connection in
            let sends = outcomes.map(\.send)
            var slots: [ReloadTokenSlot: Slot] = [:]
            for row in try connection.query(
                """
                SELECT \(columnsOf: Slot.Column.self)
                FROM (SELECT DISTINCT * FROM unnest(\(PostgresArray(sends.map(\.slot.app.rawValue))),
                        \(PostgresArray(sends.map(\.slot.kind.pushType))),
                        \(PostgresArray(sends.map(\.slot.kind.controlKind))),
                        \(PostgresArray(sends.map { ReloadTokenQueries.shard($0.slot) })),
                        \(PostgresArray(sends.map(\.slot.device.rawValue))))
                    AS k(app_id, push_type, control_kind, shard, device_id)) AS k
                JOIN reload_tokens t ON t.app_id = k.app_id AND t.push_type = k.push_type
                    AND t.control_kind = k.control_kind AND t.shard = k.shard AND t.device_id = k.device_id
                JOIN apps a ON a.app_id = t.app_id
                """
            ) {
                let slot = try Slot(row)
                slots[slot.slot] = slot
            }
            var settled: [ReloadTokenSlot] = []
            for outcome in outcomes {
                guard var slot = slots[outcome.send.slot], slot.pacing.sending?.reload == outcome.send.reload else {
                    continue
                }
                slot.pacing.settle(retryAt: outcome.retryAt)
                slots[slot.slot] = slot
                settled.append(slot.slot)
            }
            try write(Array(Set(settled)).map { slots[$0]! }, connection)
            try insert(outcomes, connection)
            for outcome in outcomes where outcome.kind == .tokenInvalidated {
                let slot = outcome.send.slot
                try connection.execute(
                    """
                    WITH gone AS (
                        DELETE FROM reload_tokens
                        WHERE \(key: slot) AND token = \(outcome.send.token)
                            AND registered_at <= \(PostgresTimestamp(outcome.invalidSince ?? outcome.attemptedAt))
                    )
                    INSERT INTO reload_token_changes (app_id, device_id, push_type, control_kind, change, token, status,
                        reason, invalid_since)
                    VALUES (\(slot.app.rawValue), \(slot.device.rawValue), \(slot.kind.pushType), \(slot.kind.controlKind),
                        'invalidated', \(outcome.send.token), \(outcome.status), \(outcome.reason ?? "Unregistered"),
                        \(PostgresTimestamp(outcome.invalidSince ?? outcome.attemptedAt)))
                    """
                )
            }
            for suspension in suspensions {
                try connection.execute(
                    """
                    INSERT INTO delivery_suspensions (app_id, status, reason, credentials_updated_at)
                    VALUES (\(suspension.app.rawValue), \(suspension.status), \(suspension.reason),
                        \(PostgresTimestamp(suspension.credentialsUpdatedAt)))
                    """
                )
            }
        }
    }

    /// The reloads on their way in `shards` when their worker stopped: sent again by the worker
    /// that took the shards over (APNs may have had them; a reload twice is harmless), each as
    /// its next attempt.
    static func interrupted(in shards: Set<Int>, _ connection: Connection) throws -> [ReloadSend] {
        try connection.query(
            """
            UPDATE reload_tokens t SET sending_attempt = t.sending_attempt + 1
            FROM apps a
            WHERE a.app_id = t.app_id AND t.shard = ANY (\(PostgresArray(shards.sorted())))
                AND t.sending_reload IS NOT NULL
            RETURNING \(columnsOf: Slot.Column.self)
            """
        ).map { row in
            let slot = try Slot(row)
            return slot.send(slot.pacing.sending!)
        }
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

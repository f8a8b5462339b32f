import ActivityLifecycle
import CanonicalJSON
import Postgres

/// Recording reloads: their outcomes, the slots they settle, and the fan-outs' cursors past the
/// pages they finish, in one transaction.
extension ReloadWorkQueries {
    /// Records what became of reloads sent, and how far their fan-outs are done (`cursors`): the
    /// slots settle (a due reload that was sent done, a retry due at `retryAt`, unless a newer
    /// request waits), the outcomes are appended, the cursors move past their pages (a fan-out
    /// done leaves), dead tokens leave their slots (unless registered after APNs' time) with the
    /// change kept, and suspensions are recorded.
    static func record(
        _ outcomes: [ReloadOutcome],
        cursors: [ReloadFanout: ReloadFanout.Position],
        suspensions: [Suspension],
        _ connection: Connection
    ) throws {
        try connection.transaction { connection in
            try settle(outcomes.filter { $0.retryAt != nil || $0.send.origin == .due }, connection)
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
            try move(cursors, connection)
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

    /// Settles the slots the outcomes were sent to (or held for): the due reload each was sent
    /// from is done, and a reload to try again is due at its `retryAt` — unless a newer request
    /// waits in the slot already, which the next reload carries anyway.
    private static func settle(_ outcomes: [ReloadOutcome], _ connection: Connection) throws {
        guard !outcomes.isEmpty else { return }
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
            """
        ) {
            let slot = try Slot(row)
            slots[slot.slot] = slot
        }
        var changed: Set<ReloadTokenSlot> = []
        for outcome in outcomes {
            guard var slot = slots[outcome.send.slot] else { continue }
            let sent = ReloadPacing.Sending(reload: outcome.send.reload, attempt: outcome.send.attempt)
            var pacing = ReloadPacing(due: slot.due?.reload == sent.reload ? nil : slot.due, sending: sent)
            pacing.settle(retryAt: outcome.retryAt)
            guard pacing.due != slot.due else { continue }
            slot.due = pacing.due
            slots[slot.slot] = slot
            changed.insert(slot.slot)
        }
        try write(changed.map { (slots[$0]!.slot, slots[$0]!.shard, slots[$0]!.due) }, connection)
    }

    /// Moves the fan-outs' cursors past the pages recorded; a fan-out recorded to its end leaves.
    private static func move(_ cursors: [ReloadFanout: ReloadFanout.Position], _ connection: Connection) throws {
        let moved = cursors.compactMap { fanout, position in
            if case .after(let device) = position { (fanout, device) } else { nil }
        }
        let ended = cursors.filter { $0.value == .end }.map(\.key)
        if !moved.isEmpty {
            try connection.execute(
                """
                UPDATE reload_fanouts f SET after_device = u.after_device
                FROM unnest(\(PostgresArray(moved.map(\.0.shard))), \(PostgresArray(moved.map(\.0.reload))),
                    \(PostgresArray(moved.map(\.1)))) AS u(shard, reload_id, after_device)
                WHERE f.shard = u.shard AND f.reload_id = u.reload_id
                """
            )
        }
        if !ended.isEmpty {
            try connection.execute(
                """
                DELETE FROM reload_fanouts f
                USING unnest(\(PostgresArray(ended.map(\.shard))), \(PostgresArray(ended.map(\.reload))))
                    AS u(shard, reload_id)
                WHERE f.shard = u.shard AND f.reload_id = u.reload_id
                """
            )
        }
    }
}

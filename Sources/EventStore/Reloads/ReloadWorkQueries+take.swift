import ActivityLifecycle
import CanonicalJSON
import Postgres

/// Taking reloads: the due ones, then the fan-outs' next pages, each device decided by its pacing
/// behind what the worker has on its way.
extension ReloadWorkQueries {
    /// A fan-out to walk, with its request's target and the app's interval for its kind.
    struct Fanout {
        let fanout: ReloadFanout
        let after: String
        let app: AppID
        let kind: ReloadKind
        let widgetKinds: PostgresArray<String>?
        let devices: PostgresArray<String>?
        let requestedAt: PostgresTimestamp
        let interval: Int

        init(_ row: PostgresRow) throws {
            fanout = ReloadFanout(reload: try row.decode("reload_id"), shard: try row.decode("shard"))
            after = try row.decode("after_device")
            app = AppID(uncheckedRawValue: try row.decode("app_id"))
            guard
                let kind = ReloadKind(
                    pushType: try row.decode("push_type"),
                    controlKind: try row.decode("control_kind")
                )
            else { throw EventStoreError.unreadableRow("reload_requests: a kind") }
            self.kind = kind
            widgetKinds = try row.decode("widget_kinds")
            devices = try row.decode("device_ids")
            requestedAt = try row.decode("requested_at")
            interval = try row.decode("interval_seconds")
        }

        func slot(of device: String) -> ReloadTokenSlot {
            ReloadTokenSlot(app: app, device: DeviceID(uncheckedRawValue: device), kind: kind)
        }
    }

    /// The slots one `take` has decided about, with what it writes: the slots' due reloads
    /// changed, and the requests coalesced.
    fileprivate struct Decisions {
        let now: Timestamp
        let onTheirWay: [ReloadTokenSlot: ReloadOnItsWay]
        var pacing: [ReloadTokenSlot: ReloadPacing] = [:]
        var shards: [ReloadTokenSlot: Int] = [:]
        var changed: [ReloadTokenSlot] = []
        var coalesced: [ReloadOutcome] = []

        /// A slot's pacing as this take knows it: what the row says, behind the reload on its
        /// way (whose due reload, if it came from one, is still written).
        mutating func pacing(
            of slot: ReloadTokenSlot,
            shard: Int,
            due: ReloadPacing.Due?,
            lastSentAt: Timestamp?
        ) -> ReloadPacing {
            if let known = pacing[slot] { return known }
            shards[slot] = shard
            guard let onItsWay = onTheirWay[slot] else { return ReloadPacing(lastSentAt: lastSentAt, due: due) }
            return ReloadPacing(
                lastSentAt: max(lastSentAt ?? onItsWay.sentAt, onItsWay.sentAt),
                due: due?.reload == onItsWay.sending.reload ? nil : due,
                sending: onItsWay.sending
            )
        }

        /// The slot's due reload, sent now if it is due and nothing is on its way.
        mutating func takeDue(_ row: Slot) -> ReloadSend? {
            var slot = pacing(of: row.slot, shard: row.shard, due: row.due, lastSentAt: nil)
            defer { pacing[row.slot] = slot }
            return slot.takeDue(at: now).map {
                ReloadSend(slot: row.slot, token: row.token, reload: $0.reload, attempt: $0.attempt, origin: .due)
            }
        }

        /// The request `reload` for a slot: sent now, or coalesced (the slot's due reload written).
        mutating func request(
            _ reload: Int64,
            for slot: ReloadTokenSlot,
            shard: Int,
            token: String,
            due: ReloadPacing.Due?,
            lastSentAt: Timestamp?,
            interval: Duration
        ) -> ReloadSend? {
            var paced = pacing(of: slot, shard: shard, due: due, lastSentAt: lastSentAt)
            defer { pacing[slot] = paced }
            switch paced.request(reload, at: now, interval: interval) {
            case .send(let sending):
                return ReloadSend(slot: slot, token: token, reload: reload, attempt: sending.attempt, origin: .fanout)
            case .coalesce(let until):
                changed.append(slot)
                let send = ReloadSend(slot: slot, token: token, reload: reload, attempt: 0, origin: .fanout)
                coalesced.append(ReloadOutcome(send: send, kind: .coalesced, retryAt: until, attemptedAt: now))
                return nil
            }
        }

        /// The slots whose due reload this take changed, as written.
        var dues: [(slot: ReloadTokenSlot, shard: Int, due: ReloadPacing.Due?)] {
            Set(changed).map { ($0, shards[$0]!, pacing[$0]!.due) }
        }
    }

    /// Takes the reloads due in `shards` (up to `limit`), then walks the fan-outs there a page at
    /// a time, from `reading`'s positions (the worker's, ahead of the recorded cursors), with
    /// what room is left: each device is sent the reload or coalesced, as its pacing says (behind
    /// `onTheirWay`). Only coalesced requests are written. Apps in `paused` are left alone.
    static func take(
        in shards: Set<Int>,
        paused: Set<AppID>,
        limit: Int,
        now: Timestamp,
        onTheirWay: [ReloadTokenSlot: ReloadOnItsWay],
        reading: [ReloadFanout: ReloadFanout.Position],
        _ connection: Connection
    ) throws -> ReloadWork {
        let held = PostgresArray(shards.sorted())
        let skipped = PostgresArray(paused.map(\.rawValue).sorted())
        return try connection.transaction { connection in
            var decisions = Decisions(now: now, onTheirWay: onTheirWay)
            var due: [ReloadSend] = []
            var nextDue: Timestamp? = nil
            let window = limit + onTheirWay.count
            let rows = try connection.query(
                """
                SELECT \(columnsOf: Slot.Column.self) FROM reload_tokens t
                WHERE t.shard = ANY (\(held)) AND t.due_at IS NOT NULL AND t.app_id <> ALL (\(skipped))
                ORDER BY t.due_at LIMIT \(literal: window)
                """
            )
            for row in rows {
                let slot = try Slot(row)
                guard onTheirWay[slot.slot] == nil else { continue }
                guard slot.due!.at <= now else {
                    nextDue = slot.due!.at
                    break
                }
                guard due.count < limit else { break }
                if let send = decisions.takeDue(slot) { due.append(send) }
            }
            var moreWaiting = nextDue == nil && rows.count == window
            var room = limit - due.count
            var pages: [ReloadPage] = []
            let ended = reading.values.filter { $0 == .end }.count
            for row in try connection.query(
                """
                SELECT f.shard, f.reload_id, f.after_device, r.app_id, r.push_type, r.control_kind, r.widget_kinds,
                    r.device_ids, r.requested_at,
                    CASE WHEN r.push_type = 'widgets' THEN a.widget_reload_interval_seconds
                        ELSE a.control_reload_interval_seconds END AS interval_seconds
                FROM reload_fanouts f JOIN reload_requests r ON r.id = f.reload_id JOIN apps a ON a.app_id = r.app_id
                WHERE f.shard = ANY (\(held)) AND r.app_id <> ALL (\(skipped))
                ORDER BY f.reload_id, f.shard LIMIT \(literal: 64 + ended)
                """
            ) {
                let fanout = try Fanout(row)
                guard case .after(let after) = reading[fanout.fanout] ?? .after(fanout.after) else { continue }
                guard room > 0 else {
                    moreWaiting = true
                    break
                }
                let devices = try page(of: fanout, after: after, limit: room, connection)
                var sends: [ReloadSend] = []
                for device in devices {
                    if device.handled { continue }
                    let slot = fanout.slot(of: device.device)
                    if let send = decisions.request(
                        fanout.fanout.reload,
                        for: slot,
                        shard: fanout.fanout.shard,
                        token: device.token,
                        due: device.due,
                        lastSentAt: device.lastSentAt,
                        interval: .seconds(fanout.interval)
                    ) {
                        sends.append(send)
                    }
                }
                let through: ReloadFanout.Position = devices.count < room ? .end : .after(devices.last!.device)
                if through != .end { moreWaiting = true }
                pages.append(ReloadPage(fanout: fanout.fanout, sends: sends, through: through))
                room -= devices.count
            }
            try write(decisions.dues, connection)
            try insert(decisions.coalesced, connection)
            let coalescedUntil = decisions.coalesced.compactMap(\.retryAt).min()
            return ReloadWork(
                due: due,
                pages: pages,
                nextDue: [nextDue, coalescedUntil].compactMap { $0 }.min(),
                moreWaiting: moreWaiting
            )
        }
    }

    /// A device of a fan-out's page: its token and due reload, and for a paced kind when it last
    /// had a reload sent, and whether it had this request (or a newer one) already — recorded
    /// before a worker stopped, its page not yet passed.
    struct PageDevice {
        let device: String
        let token: String
        let due: ReloadPacing.Due?
        let lastSentAt: Timestamp?
        let handled: Bool

        init(_ row: PostgresRow) throws {
            device = try row.decode("device_id")
            token = try row.decode("token")
            due = try Slot.due(row)
            lastSentAt = try row.decode("last_sent_at", as: PostgresTimestamp?.self).map(Timestamp.init)
            handled = try row.decode("handled")
        }
    }

    /// The next devices of a fan-out, in key order after `after`: the named devices one by one,
    /// or every device of the app that has the kind (and one of the widget kinds named).
    private static func page(
        of fanout: Fanout,
        after: String,
        limit: Int,
        _ connection: Connection
    ) throws -> [PageDevice] {
        let history = History(fanout)
        let shard = fanout.fanout.shard
        if let devices = fanout.devices {
            return try connection.query(
                """
                SELECT t.device_id, t.token, t.due_reload, t.due_at, t.due_attempt, h.last_sent_at, h.handled
                FROM unnest(\(devices)::text[]) AS n(device_id)
                JOIN reload_tokens t ON t.app_id = \(fanout.app.rawValue) AND t.push_type = \(fanout.kind.pushType)
                    AND t.control_kind = \(fanout.kind.controlKind) AND t.shard = \(shard) AND t.device_id = n.device_id
                CROSS JOIN \(history)
                WHERE n.device_id > \(after)
                    AND (\(fanout.widgetKinds)::text[] IS NULL OR t.widget_kinds && \(fanout.widgetKinds)::text[])
                ORDER BY t.device_id LIMIT \(literal: limit)
                """
            ).map(PageDevice.init)
        }
        return try connection.query(
            """
            SELECT t.device_id, t.token, t.due_reload, t.due_at, t.due_attempt, h.last_sent_at, h.handled
            FROM reload_tokens t CROSS JOIN \(history)
            WHERE t.app_id = \(fanout.app.rawValue) AND t.push_type = \(fanout.kind.pushType)
                AND t.control_kind = \(fanout.kind.controlKind) AND t.shard = \(shard) AND t.device_id > \(after)
                AND (\(fanout.widgetKinds)::text[] IS NULL OR t.widget_kinds && \(fanout.widgetKinds)::text[])
            ORDER BY t.device_id LIMIT \(literal: limit)
            """
        ).map(PageDevice.init)
    }

    /// What a page reads of each device's past reloads: for a paced kind, its rows of
    /// `reload_deliveries` since the request (or the interval, if longer ago; a few minutes more
    /// for the clocks), only the partitions of those times read; for an unpaced kind, nothing.
    struct History {
        let reload: Int64
        let since: PostgresTimestamp?
        let interval: Int

        init(_ fanout: Fanout) {
            reload = fanout.fanout.reload
            since = fanout.interval > 0 ? fanout.requestedAt : nil
            interval = fanout.interval
        }
    }

}

extension PostgresQuery.StringInterpolation {
    /// A page's history of its devices (`h.last_sent_at`, `h.handled`), joined to `t`, its row of
    /// `reload_tokens`.
    fileprivate mutating func appendInterpolation(_ history: ReloadWorkQueries.History) {
        guard let since = history.since else {
            appendLiteral("(SELECT NULL::timestamptz AS last_sent_at, false AS handled) AS h")
            return
        }
        appendLiteral(
            """
            LATERAL (
                SELECT max(d.attempted_at) FILTER (WHERE d.apns_id IS NOT NULL) AS last_sent_at,
            """
        )
        appendLiteral(" coalesce(bool_or(d.reload_id >= ")
        appendInterpolation(history.reload)
        appendLiteral(
            """
            ), false) AS handled
                FROM reload_deliveries d
                WHERE d.app_id = t.app_id AND d.device_id = t.device_id AND d.push_type = t.push_type
                    AND d.control_kind = t.control_kind
                    AND d.recorded_at >= least(
            """
        )
        appendInterpolation(since)
        appendLiteral(", now() - make_interval(secs => ")
        appendInterpolation(history.interval)
        appendLiteral(")) - interval '5 minutes') AS h")
    }
}

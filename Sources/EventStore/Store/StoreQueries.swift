import ActivityLifecycle
import Foundation
import Postgres

/// The SQL of the event store. Every statement is a literal here; values are parameters.
enum StoreQueries {
    /// What a command needs: the app's rules, the open counts (for requests), the activity.
    struct Loaded {
        let context: DecisionContext
        let activity: StoredActivity?
    }

    static func load(
        _ stream: StreamID,
        deviceID: DeviceID?,
        isRequest: Bool,
        _ connection: Connection
    ) throws -> Loaded {
        // Two statements rather than one with a flag: with a flag, a plan for one value is
        // cheaper than the generic plan, so PostgreSQL would plan the statement again on every
        // execution instead of once per session.
        let query: PostgresQuery =
            isRequest
            ? """
            SELECT a.max_open, a.max_open_per_device, a.priority_budget_per_hour, a.frequent_updates,
                   (SELECT sum(open) FROM app_open_stripes s WHERE s.app_id = a.app_id)::bigint,
                   (SELECT sum(open) FROM global_open_stripes)::bigint,
                   (SELECT global_max_open FROM service_limits),
                   (SELECT open FROM device_open_counts d WHERE d.app_id = a.app_id AND d.device_id = \(deviceID?.rawValue)),
                   r.*
            FROM apps a LEFT JOIN liveline_activity_rows r ON r.app_id = a.app_id AND r.activity_id = \(stream.activity.rawValue)
            WHERE a.app_id = \(stream.app.rawValue)
            """
            : """
            SELECT a.max_open, a.max_open_per_device, a.priority_budget_per_hour, a.frequent_updates,
                   NULL::bigint, NULL::bigint, (SELECT global_max_open FROM service_limits), NULL::integer,
                   r.*
            FROM apps a LEFT JOIN liveline_activity_rows r ON r.app_id = a.app_id AND r.activity_id = \(stream.activity.rawValue)
            WHERE a.app_id = \(stream.app.rawValue)
            """
        let rows = try connection.query(query)
        guard let row = rows.single else { throw EventStoreError.unknownApp(stream.app) }
        let rules = AppRules(
            maxOpen: try row.decode(0),
            maxOpenPerDevice: try row.decode(1),
            priorityBudgetPerHour: try row.decode(2),
            frequentUpdates: try row.decode(3)
        )
        let open = OpenCounts(
            app: try row.decode(4, as: Int?.self) ?? 0,
            global: try row.decode(5, as: Int?.self) ?? 0,
            device: try row.decode(7, as: Int?.self) ?? 0
        )
        return Loaded(
            context: DecisionContext(app: rules, globalMaxOpen: try row.decode(6), open: open),
            activity: try ProjectionRow.stored(from: row, at: 8)
        )
    }

    static func activity(_ stream: StreamID, _ connection: Connection) throws -> StoredActivity? {
        try connection.query(
            """
            SELECT * FROM liveline_activity_rows
            WHERE app_id = \(stream.app.rawValue) AND activity_id = \(stream.activity.rawValue)
            """
        ).single.flatMap { try ProjectionRow.stored(from: $0, at: 0) }
    }

    static func activities(_ streams: [StreamID], _ connection: Connection) throws -> [StoredActivity] {
        try connection.query(
            """
            SELECT r.* FROM liveline_activity_rows r
            JOIN unnest(\(PostgresArray(streams.map(\.app.rawValue))), \(PostgresArray(streams.map(\.activity.rawValue))))
                AS wanted(app_id, activity_id)
              ON r.app_id = wanted.app_id AND r.activity_id = wanted.activity_id
            """
        ).compactMap { try ProjectionRow.stored(from: $0, at: 0) }
    }

    static func projectionsWithoutEvents(limit: Int, _ connection: Connection) throws -> [StreamID] {
        try connection.query(
            """
            SELECT a.app_id, a.activity_id FROM activities a
            WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.app_id = a.app_id AND e.activity_id = a.activity_id)
            ORDER BY a.app_id, a.activity_id LIMIT \(limit)
            """
        ).map { row in
            StreamID(
                app: AppID(uncheckedRawValue: try row.decode(0)),
                activity: ActivityID(uncheckedRawValue: try row.decode(1))
            )
        }
    }

    /// Appends through `liveline_append`; returns the first position and the recorded time.
    static func append(
        _ stored: StoredActivity,
        events: [ActivityEvent],
        expectedVersion: Int,
        openChange: Int,
        idempotency: IdempotencyKey?,
        outcome: JSONB?,
        _ connection: Connection
    ) throws -> (Int64, Timestamp) {
        let row = ProjectionRow.json(stored)
        let rows = try connection.query(
            """
            SELECT first_position, recorded_at FROM liveline_append(
                \(stored.stream.app.rawValue), \(stored.stream.activity.rawValue), \(Int32(expectedVersion)), \(row),
                \(PostgresArray(events.map(\.type.rawValue))), \(PostgresArray(events.map { EventData.encode($0.payload) })),
                \(PostgresArray(events.map(\.cause.rawValue))),
                \(PostgresArray(events.map { PostgresTimestamp($0.occurredAt) })),
                \(Int32(openChange)),
                \(idempotency?.key), \(idempotency?.requestDigest), \(outcome))
            """
        )
        guard let result = rows.single else { throw EventStoreError.unreadableRow("liveline_append returned nothing") }
        return (try result.decode(0), Timestamp(try result.decode(1, as: PostgresTimestamp.self)))
    }

    static func recordRejection(
        _ rejection: Rejection,
        of command: Command,
        on stream: StreamID,
        at now: Timestamp,
        idempotency: IdempotencyKey?,
        _ connection: Connection
    ) throws {
        let details = JSONB(utf8: JSONValue.object(rejection.details).canonicalJSON)
        guard let idempotency else {
            try connection.execute(
                """
                INSERT INTO rejections (app_id, activity_id, command, code, details, occurred_at)
                VALUES (\(stream.app.rawValue), \(stream.activity.rawValue), \(command.name), \(rejection.code),
                        \(details), \(PostgresTimestamp(now)))
                """
            )
            return
        }
        try connection.execute(
            """
            WITH rejection AS (
                INSERT INTO rejections (app_id, activity_id, command, code, details, occurred_at)
                VALUES (\(stream.app.rawValue), \(stream.activity.rawValue), \(command.name), \(rejection.code),
                        \(details), \(PostgresTimestamp(now)))
            )
            INSERT INTO idempotency_keys (app_id, idempotency_key, request_sha256, activity_id, outcome)
            VALUES (\(stream.app.rawValue), \(idempotency.key), \(idempotency.requestDigest),
                    \(stream.activity.rawValue), \(RecordedOutcome.rejected(rejection).json))
            """
        )
    }

    static func idempotencyRecord(
        app: AppID,
        key: String,
        _ connection: Connection
    ) throws -> (digest: [UInt8], activity: ActivityID, outcome: RecordedOutcome)? {
        guard
            let row = try connection.query(
                """
                SELECT request_sha256, activity_id, outcome FROM idempotency_keys
                WHERE app_id = \(app.rawValue) AND idempotency_key = \(key)
                """
            ).single
        else { return nil }
        guard let activity = ActivityID(rawValue: try row.decode(1)),
            let outcome = RecordedOutcome(json: try row.decode(2))
        else { throw EventStoreError.unreadableRow("idempotency_keys \(key)") }
        return (try row.decode(0), activity, outcome)
    }

    static func events(
        of stream: StreamID,
        throughVersion version: Int,
        _ connection: Connection
    ) throws -> [StoredEvent] {
        try connection.query(
            """
            SELECT position, app_id, activity_id, version, type, data, caused_by::text, occurred_at, recorded_at
            FROM events
            WHERE app_id = \(stream.app.rawValue) AND activity_id = \(stream.activity.rawValue) AND version <= \(Int32(clamping: version))
            ORDER BY version
            """
        ).map(storedEvent)
    }

    static func events(after position: Int64, app: AppID, limit: Int, _ connection: Connection) throws -> [StoredEvent]
    {
        try connection.query(
            """
            SELECT position, app_id, activity_id, version, type, data, caused_by::text, occurred_at, recorded_at
            FROM events
            WHERE app_id = \(app.rawValue) AND position > \(position) AND position < liveline_stable_position()
            ORDER BY position LIMIT \(limit)
            """
        ).map(storedEvent)
    }

    static func events(after position: Int64, limit: Int, _ connection: Connection) throws -> [StoredEvent] {
        try connection.query(
            """
            SELECT position, app_id, activity_id, version, type, data, caused_by::text, occurred_at, recorded_at
            FROM events
            WHERE position > \(position) AND position < liveline_stable_position()
            ORDER BY position LIMIT \(limit)
            """
        ).map(storedEvent)
    }

    /// Decodes the columns selected by the event readers above, in their order.
    static func storedEvent(_ row: PostgresRow) throws -> StoredEvent {
        try storedEvent(row, of: streamID(row))
    }

    /// The stream of such a row (its columns 1 and 2).
    static func streamID(_ row: PostgresRow) throws -> StreamID {
        guard let app = AppID(rawValue: try row.decode(1)), let activity = ActivityID(rawValue: try row.decode(2))
        else {
            throw EventStoreError.unreadableRow("events at position \(try row.decode(0, as: Int64.self))")
        }
        return StreamID(app: app, activity: activity)
    }

    /// Such a row, of a stream already decoded (from another row of it).
    static func storedEvent(_ row: PostgresRow, of stream: StreamID) throws -> StoredEvent {
        guard let cause = try row.decode(6, as: KnownRawValue<Cause>.self).value else {
            throw EventStoreError.unreadableRow("events at position \(try row.decode(0, as: Int64.self))")
        }
        guard let type = try row.decode(4, as: KnownRawValue<EventType>.self).value else {
            throw EventStoreError.unreadableRow(
                "unknown event type \(try row.decode(4, as: String.self)) at position \(try row.decode(0, as: Int64.self))"
            )
        }
        return StoredEvent(
            position: try row.decode(0),
            stream: stream,
            event: ActivityEvent(
                version: try row.decode(3),
                occurredAt: Timestamp(try row.decode(7, as: PostgresTimestamp.self)),
                cause: cause,
                payload: try EventData.decode(type: type, data: row.decode(5))
            ),
            recordedAt: Timestamp(try row.decode(8, as: PostgresTimestamp.self))
        )
    }
}

extension PostgresTimestamp {
    init(_ timestamp: Timestamp) {
        self.init(microsecondsSince1970: timestamp.microsecondsSince1970)
    }
}

extension Timestamp {
    init(_ timestamp: PostgresTimestamp) {
        self.init(microsecondsSince1970: timestamp.microsecondsSince1970)
    }
}

extension StoreQueries {
    static func activities(
        of app: AppID,
        in state: ActivityState?,
        limit: Int,
        after cursor: ActivityCursor?,
        _ connection: Connection
    ) throws -> [StoredActivity] {
        // Newest first; the cursor is the (requested_at, activity_id) of the last row seen.
        let after = cursor.map { PostgresTimestamp($0.requestedAt) }
        let afterID = cursor?.activityID.rawValue
        let rows: PostgresRows =
            if let state {
                try connection.query(
                    """
                    SELECT * FROM liveline_activity_rows p
                    WHERE p.app_id = \(app.rawValue) AND p.state = \(state.rawValue)
                      AND (\(after)::timestamptz IS NULL OR (p.requested_at, p.activity_id) < (\(after), \(afterID)))
                    ORDER BY p.requested_at DESC, p.activity_id DESC LIMIT \(limit)
                    """
                )
            } else {
                try connection.query(
                    """
                    SELECT * FROM liveline_activity_rows p
                    WHERE p.app_id = \(app.rawValue)
                      AND (\(after)::timestamptz IS NULL OR (p.requested_at, p.activity_id) < (\(after), \(afterID)))
                    ORDER BY p.requested_at DESC, p.activity_id DESC LIMIT \(limit)
                    """
                )
            }
        return try rows.compactMap { try ProjectionRow.stored(from: $0, at: 0) }
    }

    static func rejections(
        of app: AppID,
        activity: ActivityID?,
        code: String?,
        limit: Int,
        _ connection: Connection
    ) throws -> [RecordedRejection] {
        try connection.query(
            """
            SELECT activity_id, command, code, details, occurred_at FROM rejections
            WHERE app_id = \(app.rawValue) AND (\(code)::text IS NULL OR code = \(code))
              AND (\(activity?.rawValue)::text IS NULL OR activity_id = \(activity?.rawValue))
            ORDER BY occurred_at DESC, id DESC LIMIT \(limit)
            """
        ).map { row in
            RecordedRejection(
                app: app,
                activity: try row.decode(0),
                command: try row.decode(1),
                code: try row.decode(2),
                details: try JSONDecoder().decode(
                    [String: JSONValue].self,
                    from: Data(row.decode(3, as: JSONB.self).utf8)
                ),
                occurredAt: Timestamp(try row.decode(4, as: PostgresTimestamp.self))
            )
        }
    }

    static func createApp(_ app: AppID, _ settings: AppSettings, _ connection: Connection) throws {
        try connection.execute(
            """
            INSERT INTO apps (app_id, bundle_id, max_open, max_open_per_device, priority_budget_per_hour, frequent_updates)
            VALUES (\(app.rawValue), \(settings.bundleID), \(Int32(clamping: settings.maxOpen)),
                    \(settings.maxOpenPerDevice.map { Int32(clamping: $0) }), \(Int32(clamping: settings.priorityBudgetPerHour)),
                    \(settings.frequentUpdates))
            """
        )
    }

    /// Changes an app's settings. The app's stripes are locked first, in the order closings
    /// take them (stripe, then the app's row), before the trigger respreads the cap.
    static func updateApp(_ app: AppID, _ settings: AppSettings, _ connection: Connection) throws -> Bool {
        try connection.execute(
            "SELECT 1 FROM app_open_stripes WHERE app_id = \(app.rawValue) ORDER BY stripe FOR UPDATE"
        )
        return try connection.execute(
            """
            UPDATE apps SET bundle_id = \(settings.bundleID), max_open = \(Int32(clamping: settings.maxOpen)),
                max_open_per_device = \(settings.maxOpenPerDevice.map { Int32(clamping: $0) }),
                priority_budget_per_hour = \(Int32(clamping: settings.priorityBudgetPerHour)),
                frequent_updates = \(settings.frequentUpdates)
            WHERE app_id = \(app.rawValue)
            """
        ) == 1
    }

    static func appSettings(_ app: AppID, _ connection: Connection) throws -> AppSettings? {
        try connection.query(
            """
            SELECT bundle_id, max_open, max_open_per_device, priority_budget_per_hour, frequent_updates
            FROM apps WHERE app_id = \(app.rawValue)
            """
        ).single.map { row in
            AppSettings(
                bundleID: try row.decode(0),
                maxOpen: try row.decode(1),
                maxOpenPerDevice: try row.decode(2),
                priorityBudgetPerHour: try row.decode(3),
                frequentUpdates: try row.decode(4)
            )
        }
    }

    /// Sets the global cap: the stripes are locked first, as closings take them, then the cap is
    /// respread from what the stripes hold.
    static func setGlobalMaxOpen(_ limit: Int, _ connection: Connection) throws {
        try connection.execute("SELECT 1 FROM global_open_stripes ORDER BY stripe FOR UPDATE")
        try connection.execute("UPDATE service_limits SET global_max_open = \(Int32(limit))")
        try connection.execute("SELECT liveline_respread_global_cap()")
    }

    static func openCounts(of app: AppID, _ connection: Connection) throws -> (app: Int, global: Int) {
        let row = try connection.query(
            """
            SELECT (SELECT sum(open) FROM app_open_stripes WHERE app_id = \(app.rawValue))::bigint,
                   (SELECT sum(open) FROM global_open_stripes)::bigint
            """
        ).single
        return (try row?.decode(0, as: Int?.self) ?? 0, try row?.decode(1, as: Int?.self) ?? 0)
    }
}

extension StoreQueries {
    /// Claims up to `limit` activities with a deadline due by `now` that no other worker holds;
    /// they stay locked until the surrounding transaction ends.
    static func claimDue(at now: Timestamp, limit: Int, _ connection: Connection) throws -> [StoredActivity] {
        try connection.query(
            """
            SELECT * FROM liveline_activity_rows
            WHERE next_deadline_at <= \(PostgresTimestamp(now))
            ORDER BY next_deadline_at LIMIT \(limit)
            FOR UPDATE SKIP LOCKED
            """
        ).compactMap { try ProjectionRow.stored(from: $0, at: 0) }
    }

    static func earliestDeadline(_ connection: Connection) throws -> Timestamp? {
        try connection.query("SELECT min(next_deadline_at) FROM activities").single?
            .decode(0, as: PostgresTimestamp?.self).map(Timestamp.init)
    }

    static func apps(only app: AppID?, _ connection: Connection) throws -> [AppSummary] {
        try connection.query(
            """
            SELECT a.app_id, a.bundle_id, a.max_open, a.max_open_per_device, a.priority_budget_per_hour,
                   a.frequent_updates,
                   coalesce((SELECT sum(open) FROM app_open_stripes s WHERE s.app_id = a.app_id), 0)::bigint
            FROM apps a
            WHERE \(app?.rawValue)::text IS NULL OR a.app_id = \(app?.rawValue)
            ORDER BY a.app_id
            """
        ).map { row in
            AppSummary(
                app: AppID(uncheckedRawValue: try row.decode(0)),
                settings: AppSettings(
                    bundleID: try row.decode(1),
                    maxOpen: try row.decode(2),
                    maxOpenPerDevice: try row.decode(3),
                    priorityBudgetPerHour: try row.decode(4),
                    frequentUpdates: try row.decode(5)
                ),
                openActivities: try row.decode(6)
            )
        }
    }

    static func insertKey(_ keyID: UUID, of app: AppID, secretDigest: [UInt8], _ connection: Connection) throws {
        try connection.execute(
            """
            INSERT INTO api_keys (key_id, app_id, secret_sha256)
            VALUES (\(keyID), \(app.rawValue), \(secretDigest))
            """
        )
    }

    static func revokeKey(_ keyID: UUID, of app: AppID, _ connection: Connection) throws -> Bool {
        try connection.query(
            """
            UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
            WHERE key_id = \(keyID) AND app_id = \(app.rawValue)
            RETURNING key_id
            """
        ).single != nil
    }

    static func keyHolder(secretDigest: [UInt8], _ connection: Connection) throws -> KeyHolder? {
        try connection.query(
            """
            SELECT key_id, app_id FROM api_keys
            WHERE secret_sha256 = \(secretDigest) AND revoked_at IS NULL
            """
        ).single.map { row in
            KeyHolder(keyID: try row.decode(0), app: AppID(uncheckedRawValue: try row.decode(1)))
        }
    }

    static func openActivitiesByState(_ connection: Connection) throws -> [ActivityState: Int] {
        var counts: [ActivityState: Int] = [:]
        for row in try connection.query(
            """
            SELECT state::text, count(*) FROM activities
            WHERE state IN ('pending', 'active', 'stale') GROUP BY state
            """
        ) {
            guard let state = ActivityState(rawValue: try row.decode(0)) else { continue }
            counts[state] = try row.decode(1)
        }
        return counts
    }
}

extension StoreQueries {
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
                id: try row.decode(0),
                occurredAt: Timestamp(try row.decode(1, as: PostgresTimestamp.self)),
                actor: try row.decode(2),
                action: try row.decode(3),
                app: try row.decode(4, as: String?.self).map(AppID.init(uncheckedRawValue:)),
                details: try JSONParser.parseObject(row.decode(5, as: JSONB.self).utf8)
            )
        }
    }
}

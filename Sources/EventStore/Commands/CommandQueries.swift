import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of the command path: what a command loads, the one append statement, rejections and
/// idempotency records. Every statement is a literal here; values are parameters.
enum CommandQueries {
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
}

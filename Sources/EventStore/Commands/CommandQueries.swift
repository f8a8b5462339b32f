import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of the command path: what a command loads, the one append statement, rejections and
/// idempotency records. Every statement is a literal here; values are parameters.
enum CommandQueries {
    /// What a command of a batch finds: the app's rules and the open counts (`nil` when the app
    /// does not exist), the activity, and the outcome already recorded under its idempotency key.
    struct Loaded {
        let context: DecisionContext?
        let activity: StoredActivity?
        let idempotencyRecord: IdempotencyRecord?
        /// The version (`xmin`) of the app's row the context's rules were read from.
        var rulesVersion: Int64? = nil
    }

    /// What a command is loaded by.
    struct LoadKey {
        let stream: StreamID
        let isRequest: Bool
        let deviceID: DeviceID?
        let idempotencyKey: String?
    }

    /// Loads what every command of a batch needs, in one statement; one `Loaded` per key, in order.
    /// The open counts are read for requests only: nothing else opens an activity; so are the
    /// device's latest remote starts (as many as the app's push-to-start budget: all the budget
    /// needs).
    static func load(_ keys: [LoadKey], _ connection: Connection) throws -> [Loaded] {
        let rows = try connection.query(
            """
            SELECT a.app_id IS NOT NULL, a.max_open, a.max_open_per_device, a.priority_budget_per_hour,
                   a.frequent_updates,
                   CASE WHEN c.is_request THEN (SELECT sum(open) FROM app_open_stripes s WHERE s.app_id = c.app_id)::bigint END,
                   CASE WHEN c.is_request THEN (SELECT sum(open) FROM global_open_stripes)::bigint END,
                   (SELECT global_max_open FROM service_limits),
                   CASE WHEN c.is_request THEN
                       (SELECT open FROM device_open_counts d WHERE d.app_id = c.app_id AND d.device_id = c.device_id) END,
                   k.request_sha256, k.activity_id::text, k.outcome,
                   a.push_to_start_budget_per_hour,
                   CASE WHEN c.is_request AND c.device_id IS NOT NULL THEN
                       (SELECT array_agg(s.occurred_at) FROM (
                           SELECT e.occurred_at FROM events e
                           WHERE e.app_id = c.app_id AND e.data ->> 'deviceId' = c.device_id
                               AND e.type = 'activity.requested' AND e.data ? 'remoteStart'
                           ORDER BY e.occurred_at DESC LIMIT a.push_to_start_budget_per_hour) AS s) END,
                   a.xmin::text::bigint,
                   r.*
            FROM liveline_batch_commands(
                \(PostgresArray(keys.map(\.stream.app.rawValue))), \(PostgresArray(keys.map(\.stream.activity.rawValue))),
                \(PostgresArray(keys.map(\.isRequest))), \(PostgresArray(keys.map(\.deviceID?.rawValue))),
                \(PostgresArray(keys.map(\.idempotencyKey)))) AS c
            LEFT JOIN apps a ON a.app_id = c.app_id
            LEFT JOIN idempotency_keys k ON k.app_id = c.app_id AND k.idempotency_key = c.idempotency_key
            LEFT JOIN liveline_activity_rows r ON r.app_id = c.app_id AND r.activity_id = c.activity_id
            ORDER BY c.n
            """
        )
        guard rows.count == keys.count else {
            throw EventStoreError.unreadableRow("a batch of \(keys.count) commands loaded \(rows.count) rows")
        }
        return try rows.map { row in
            let context: DecisionContext? =
                try row.decode(0, as: Bool.self)
                ? DecisionContext(
                    app: AppRules(
                        maxOpen: try row.decode(1),
                        maxOpenPerDevice: try row.decode(2),
                        priorityBudgetPerHour: try row.decode(3),
                        frequentUpdates: try row.decode(4),
                        pushToStartBudgetPerHour: try row.decode(12)
                    ),
                    globalMaxOpen: try row.decode(7),
                    open: OpenCounts(
                        app: try row.decode(5, as: Int?.self) ?? 0,
                        global: try row.decode(6, as: Int?.self) ?? 0,
                        device: try row.decode(8, as: Int?.self) ?? 0
                    ),
                    remoteStarts: try row.decode(13, as: PostgresArray<PostgresTimestamp>?.self)?.elements.map(
                        Timestamp.init
                    ) ?? []
                ) : nil
            let record = try row.decode(9, as: [UInt8]?.self).map { digest in
                try IdempotencyRecord(digest: digest, activity: try row.decode(10), outcome: try row.decode(11))
            }
            return Loaded(
                context: context,
                activity: try ProjectionRow.stored(from: row, at: 15),
                idempotencyRecord: record,
                rulesVersion: try row.decode(14)
            )
        }
    }

    /// The apps whose rules commands were decided under without a load, and the versions of the
    /// app rows those rules were read from: the statement that appends them fails with `LL412`
    /// when any changed since.
    struct RulesCheck {
        var apps: [String] = []
        var versions: [Int64] = []

        mutating func add(_ app: AppID, version: Int64) {
            guard !apps.contains(app.rawValue) else { return }
            apps.append(app.rawValue)
            versions.append(version)
        }
    }

    /// Appends through `liveline_append`; returns the first position and the recorded time.
    static func append(
        _ append: ActivityAppend,
        checking rules: RulesCheck = RulesCheck(),
        _ connection: Connection
    ) throws -> (Int64, Timestamp) {
        let stream = append.stored.stream
        let events = append.events
        let rows = try connection.query(
            """
            SELECT first_position, recorded_at
            FROM liveline_rules_unchanged(\(PostgresArray(rules.apps)), \(PostgresArray(rules.versions))), liveline_append(
                \(stream.app.rawValue), \(stream.activity.rawValue), \(Int32(append.expectedVersion)),
                \(ProjectionRow.json(append.stored)),
                \(PostgresArray(events.map(\.type.rawValue))), \(PostgresArray(events.map { EventData.encode($0.payload) })),
                \(PostgresArray(events.map(\.cause.rawValue))),
                \(PostgresArray(events.map { PostgresTimestamp($0.occurredAt) })),
                \(Int32(append.openChange)),
                \(append.idempotency?.key), \(append.idempotency?.requestDigest), \(append.outcome))
            """
        )
        guard let result = rows.single else { throw EventStoreError.unreadableRow("liveline_append returned nothing") }
        return (try result.decode(0), Timestamp(try result.decode(1, as: PostgresTimestamp.self)))
    }

    /// One rejection to record, with the idempotency record of the command it refused.
    struct BatchRejection {
        let stream: StreamID
        let command: String
        let rejection: Rejection
        let at: Timestamp
        let idempotency: IdempotencyKey?
    }

    /// Records `rejections` and runs `appends` through `liveline_append_batch`, in one
    /// statement and so one transaction. Returns, for each append in order, where its events
    /// begin and when they were recorded, or what refused it; a refusal undid that append only.
    ///
    /// - Throws: when anything else failed (a deadlock, an idempotency key taken meanwhile by
    ///   another process, other than an opening's or a closing's, `rules` that changed, the
    ///   connection): then nothing was written.
    static func append(
        _ appends: [ActivityAppend],
        recording rejections: [BatchRejection],
        checking rules: RulesCheck = RulesCheck(),
        _ connection: Connection
    ) throws -> [Result<(Int64, Timestamp), AppendRefusal>] {
        // A lone append goes straight through `liveline_append`: the batch function's locks,
        // arrays and subtransaction serve many commands, and cost a lone one more than they save.
        if appends.count == 1, rejections.isEmpty {
            do {
                return [.success(try append(appends[0], checking: rules, connection))]
            } catch let error as PostgresError {
                guard let refusal = AppendRefusal(error) else { throw error }
                return [.failure(refusal)]
            }
        }
        let events = appends.flatMap(\.events)
        let rows = try connection.query(
            """
            SELECT first_position, recorded_at, refusal, refusal_detail
            FROM liveline_rules_unchanged(\(PostgresArray(rules.apps)), \(PostgresArray(rules.versions))), liveline_append_batch(
                \(PostgresArray(appends.map(\.stored.stream.app.rawValue))),
                \(PostgresArray(appends.map(\.stored.stream.activity.rawValue))),
                \(PostgresArray(appends.map { Int32($0.expectedVersion) })),
                \(PostgresArray(appends.map { ProjectionRow.json($0.stored) })),
                \(PostgresArray(appends.map { Int32($0.events.count) })),
                \(PostgresArray(events.map(\.type.rawValue))), \(PostgresArray(events.map { EventData.encode($0.payload) })),
                \(PostgresArray(events.map(\.cause.rawValue))), \(PostgresArray(events.map { PostgresTimestamp($0.occurredAt) })),
                \(PostgresArray(appends.map { Int32($0.openChange) })),
                \(PostgresArray(appends.map(\.idempotency?.key))), \(PostgresArray(appends.map(\.idempotency?.requestDigest))),
                \(PostgresArray(appends.map(\.outcome))),
                \(PostgresArray(rejections.map(\.stream.app.rawValue))),
                \(PostgresArray(rejections.map(\.stream.activity.rawValue))), \(PostgresArray(rejections.map(\.command))),
                \(PostgresArray(rejections.map(\.rejection.code))),
                \(PostgresArray(rejections.map { JSONB(utf8: JSONValue.object($0.rejection.details).canonicalJSON) })),
                \(PostgresArray(rejections.map { PostgresTimestamp($0.at) })),
                \(PostgresArray(rejections.map(\.idempotency?.key))), \(PostgresArray(rejections.map(\.idempotency?.requestDigest))),
                \(PostgresArray(rejections.map { RecordedOutcome.rejected($0.rejection).json })))
            """
        )
        guard rows.count == appends.count else {
            throw EventStoreError.unreadableRow("a batch of \(appends.count) appends returned \(rows.count) rows")
        }
        return try rows.map { row in
            if let refusal = try row.decode(2, as: String?.self) {
                return .failure(AppendRefusal(sqlState: refusal, detail: try row.decode(3)))
            }
            return .success((try row.decode(0), Timestamp(try row.decode(1, as: PostgresTimestamp.self))))
        }
    }

    static func idempotencyRecord(app: AppID, key: String, _ connection: Connection) throws -> IdempotencyRecord? {
        try connection.query(
            """
            SELECT request_sha256, activity_id::text, outcome FROM idempotency_keys
            WHERE app_id = \(app.rawValue) AND idempotency_key = \(key)
            """
        ).single.map { row in
            try IdempotencyRecord(digest: try row.decode(0), activity: try row.decode(1), outcome: try row.decode(2))
        }
    }
}

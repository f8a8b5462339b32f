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

    /// Loads what every command of a batch needs, in one statement (`LoadColumn`, then the
    /// activity's); one `Loaded` per key, in order.
    static func load(_ keys: [LoadKey], _ connection: Connection) throws -> [Loaded] {
        let rows = try connection.query(
            """
            SELECT \(columnsOf: LoadColumn.self), r.*
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
                try row.decode(LoadColumn.appExists, as: Bool.self)
                ? DecisionContext(
                    app: AppRules(
                        maxOpen: try row.decode(LoadColumn.maxOpen),
                        maxOpenPerDevice: try row.decode(LoadColumn.maxOpenPerDevice),
                        priorityBudgetPerHour: try row.decode(LoadColumn.priorityBudgetPerHour),
                        frequentUpdates: try row.decode(LoadColumn.frequentUpdates),
                        pushToStartBudgetPerHour: try row.decode(LoadColumn.pushToStartBudgetPerHour)
                    ),
                    globalMaxOpen: try row.decode(LoadColumn.globalMaxOpen),
                    open: OpenCounts(
                        app: try row.decode(LoadColumn.appOpen, as: Int?.self) ?? 0,
                        global: try row.decode(LoadColumn.globalOpen, as: Int?.self) ?? 0,
                        device: try row.decode(LoadColumn.deviceOpen, as: Int?.self) ?? 0
                    ),
                    remoteStarts: try row.decode(LoadColumn.remoteStarts, as: PostgresArray<PostgresTimestamp>?.self)?
                        .elements.map(
                            Timestamp.init
                        ) ?? []
                ) : nil
            let record = try row.decode(LoadColumn.keyRequestSHA256, as: [UInt8]?.self).map { digest in
                try IdempotencyRecord(
                    digest: digest,
                    activity: try row.decode(LoadColumn.keyActivity),
                    outcome: try row.decode(LoadColumn.keyOutcome)
                )
            }
            return Loaded(
                context: context,
                activity: try ProjectionRow.stored(from: row, at: LoadColumn.allCases.count),
                idempotencyRecord: record,
                rulesVersion: try row.decode(LoadColumn.rulesVersion)
            )
        }
    }

    /// What the load selects for each command (`c`) of its app (`a`) and idempotency key (`k`),
    /// before the activity's columns. The open counts are read for requests only: nothing else
    /// opens an activity; so are the device's latest remote starts (as many as the app's
    /// push-to-start budget: all the budget needs).
    enum LoadColumn: Int, SQLColumns {
        case appExists, maxOpen, maxOpenPerDevice, priorityBudgetPerHour, frequentUpdates, pushToStartBudgetPerHour
        case rulesVersion, globalMaxOpen, appOpen, globalOpen, deviceOpen, remoteStarts
        case keyRequestSHA256, keyActivity, keyOutcome

        var sql: StaticString {
            switch self {
            case .appExists: "a.app_id IS NOT NULL"
            case .maxOpen: "a.max_open"
            case .maxOpenPerDevice: "a.max_open_per_device"
            case .priorityBudgetPerHour: "a.priority_budget_per_hour"
            case .frequentUpdates: "a.frequent_updates"
            case .pushToStartBudgetPerHour: "a.push_to_start_budget_per_hour"
            case .rulesVersion: "a.xmin::text::bigint"
            case .globalMaxOpen: "(SELECT global_max_open FROM service_limits)"
            case .appOpen:
                "CASE WHEN c.is_request THEN (SELECT sum(open) FROM app_open_stripes s WHERE s.app_id = c.app_id)::bigint END"
            case .globalOpen: "CASE WHEN c.is_request THEN (SELECT sum(open) FROM global_open_stripes)::bigint END"
            case .deviceOpen:
                """
                CASE WHEN c.is_request THEN
                    (SELECT open FROM device_open_counts d WHERE d.app_id = c.app_id AND d.device_id = c.device_id) END
                """
            case .remoteStarts:
                """
                CASE WHEN c.is_request AND c.device_id IS NOT NULL THEN
                    (SELECT array_agg(s.occurred_at) FROM (
                        SELECT e.occurred_at FROM events e
                        WHERE e.app_id = c.app_id AND e.data ->> 'deviceId' = c.device_id
                            AND e.type = 'activity.requested' AND e.data ? 'remoteStart'
                        ORDER BY e.occurred_at DESC LIMIT a.push_to_start_budget_per_hour) AS s) END
                """
            case .keyRequestSHA256: "k.request_sha256"
            case .keyActivity: "k.activity_id::text"
            case .keyOutcome: "k.outcome"
            }
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

        /// The arguments of `liveline_rules_unchanged`.
        var arguments: PostgresArguments {
            var arguments = PostgresArguments()
            arguments.append("p_app_ids", PostgresArray(apps))
            arguments.append("p_versions", PostgresArray(versions))
            return arguments
        }
    }

    /// One rejection to record, with the idempotency record of the command it refused.
    struct BatchRejection {
        let stream: StreamID
        let command: String
        let rejection: Rejection
        let at: Timestamp
        let idempotency: IdempotencyKey?
    }

    /// Records `rejections` and runs `appends`, in one statement and so one transaction: a lone
    /// append through `liveline_append`, anything more through `liveline_append_batch` (the same
    /// steps, whose locks and arrays serve many commands). Returns, for each append in order,
    /// where its events begin and when they were recorded, or what refused it; a refusal undid
    /// that append only.
    ///
    /// - Throws: when anything else failed (a deadlock, an idempotency key or an activity taken
    ///   meanwhile by another process, `rules` that changed, the connection): then nothing was
    ///   written.
    static func append(
        _ appends: [ActivityAppend],
        recording rejections: [BatchRejection],
        checking rules: RulesCheck = RulesCheck(),
        _ connection: Connection
    ) throws -> [Result<(Int64, Timestamp), AppendRefusal>] {
        let rules = rules.arguments
        let (function, steps) =
            appends.count == 1 && rejections.isEmpty
            ? ("liveline_append", arguments(appends[0]))
            : ("liveline_append_batch", arguments(appends, recording: rejections))
        let rows = try connection.query(
            """
            SELECT first_position, recorded_at, refusal, refusal_detail
            FROM liveline_rules_unchanged(\(arguments: rules)), \(identifier: function)(\(arguments: steps))
            """
        )
        guard rows.count == appends.count else {
            throw EventStoreError.unreadableRow("\(appends.count) appends returned \(rows.count) rows")
        }
        return try rows.map { row in
            if let code = try row.decode("refusal", as: String?.self) {
                guard let refusal = AppendRefusal(code: code, detail: try row.decode("refusal_detail")) else {
                    throw EventStoreError.unreadableRow("an append was refused with \(code)")
                }
                return .failure(refusal)
            }
            return .success(
                (try row.decode("first_position"), Timestamp(try row.decode("recorded_at", as: PostgresTimestamp.self)))
            )
        }
    }

    /// The arguments of `liveline_append` for `append`, named as its parameters.
    static func arguments(_ append: ActivityAppend) -> PostgresArguments {
        let (stream, events) = (append.stored.stream, append.events)
        var arguments = PostgresArguments()
        arguments.append("p_app_id", stream.app.rawValue)
        arguments.append("p_activity_id", stream.activity.rawValue)
        arguments.append("p_expected_version", Int32(append.expectedVersion))
        arguments.append("p_row", ProjectionRow.json(append.stored))
        arguments.append("p_types", PostgresArray(events.map(\.type.rawValue)))
        arguments.append("p_data", PostgresArray(events.map { EventData.encode($0.payload) }))
        arguments.append("p_causes", PostgresArray(events.map(\.cause.rawValue)))
        arguments.append("p_occurred_at", PostgresArray(events.map { PostgresTimestamp($0.occurredAt) }))
        arguments.append("p_open_change", Int32(append.openChange))
        arguments.append("p_idempotency_key", append.idempotency?.key)
        arguments.append("p_request_sha256", append.idempotency?.requestDigest)
        arguments.append("p_outcome", append.outcome)
        // Only for a sampled request's command: without them, the statement any other runs.
        if let trace = append.trace {
            arguments.append("p_traceparent", trace.traceparent)
            arguments.append("p_tracestate", trace.tracestate)
        }
        return arguments
    }

    /// The arguments of `liveline_append_batch`, named as its parameters: the appends, their
    /// events (each append's `p_event_counts` of them, in order), and the rejections to record.
    static func arguments(_ appends: [ActivityAppend], recording rejections: [BatchRejection]) -> PostgresArguments {
        let events = appends.flatMap(\.events)
        var arguments = PostgresArguments()
        arguments.append("p_app_ids", PostgresArray(appends.map(\.stored.stream.app.rawValue)))
        arguments.append("p_activity_ids", PostgresArray(appends.map(\.stored.stream.activity.rawValue)))
        arguments.append("p_expected_versions", PostgresArray(appends.map { Int32($0.expectedVersion) }))
        arguments.append("p_rows", PostgresArray(appends.map { ProjectionRow.json($0.stored) }))
        arguments.append("p_event_counts", PostgresArray(appends.map { Int32($0.events.count) }))
        arguments.append("p_types", PostgresArray(events.map(\.type.rawValue)))
        arguments.append("p_data", PostgresArray(events.map { EventData.encode($0.payload) }))
        arguments.append("p_causes", PostgresArray(events.map(\.cause.rawValue)))
        arguments.append("p_occurred_at", PostgresArray(events.map { PostgresTimestamp($0.occurredAt) }))
        arguments.append("p_open_changes", PostgresArray(appends.map { Int32($0.openChange) }))
        arguments.append("p_idempotency_keys", PostgresArray(appends.map(\.idempotency?.key)))
        arguments.append("p_request_sha256s", PostgresArray(appends.map(\.idempotency?.requestDigest)))
        arguments.append("p_outcomes", PostgresArray(appends.map(\.outcome)))
        arguments.append("p_rejected_app_ids", PostgresArray(rejections.map(\.stream.app.rawValue)))
        arguments.append("p_rejected_activity_ids", PostgresArray(rejections.map(\.stream.activity.rawValue)))
        arguments.append("p_rejected_commands", PostgresArray(rejections.map(\.command)))
        arguments.append("p_rejected_codes", PostgresArray(rejections.map(\.rejection.code)))
        arguments.append(
            "p_rejected_details",
            PostgresArray(rejections.map { JSONB(utf8: JSONValue.object($0.rejection.details).canonicalJSON) })
        )
        arguments.append("p_rejected_at", PostgresArray(rejections.map { PostgresTimestamp($0.at) }))
        arguments.append("p_rejected_keys", PostgresArray(rejections.map(\.idempotency?.key)))
        arguments.append("p_rejected_request_sha256s", PostgresArray(rejections.map(\.idempotency?.requestDigest)))
        arguments.append(
            "p_rejected_outcomes",
            PostgresArray(rejections.map { RecordedOutcome.rejected($0.rejection).json })
        )
        // Only when a command is a sampled request's: without them, the statement any other runs.
        if appends.contains(where: { $0.trace != nil }) {
            arguments.append("p_traceparents", PostgresArray(appends.map(\.trace?.traceparent)))
            arguments.append("p_tracestates", PostgresArray(appends.map(\.trace?.tracestate)))
        }
        return arguments
    }

    static func idempotencyRecord(app: AppID, key: String, _ connection: Connection) throws -> IdempotencyRecord? {
        try connection.query(
            """
            SELECT request_sha256, activity_id::text AS activity_id, outcome FROM idempotency_keys
            WHERE app_id = \(app.rawValue) AND idempotency_key = \(key)
            """
        ).single.map { row in
            try IdempotencyRecord(
                digest: try row.decode("request_sha256"),
                activity: try row.decode("activity_id"),
                outcome: try row.decode("outcome")
            )
        }
    }
}

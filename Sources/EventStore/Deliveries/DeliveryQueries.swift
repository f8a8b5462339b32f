import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of delivery: outcomes, invalidated tokens, suspensions, held pushes, the shards'
/// cursors and leases, and the histories of streams the worker folds.
enum DeliveryQueries {
    /// Appends outcomes, invalidations and suspensions, writes and deletes held pushes, and
    /// moves the shards' cursors (of the shards `worker` still holds) — in one transaction, so a
    /// cursor never passes an outcome (or a hold) that is not recorded.
    static func record(
        _ writes: DeliveryWrites,
        cursors: [Int: Int64],
        worker: String,
        _ connection: Connection
    ) throws {
        let (records, invalidations, suspensions) = (writes.records, writes.invalidations, writes.suspensions)
        let (held, released) = (writes.held, writes.released)
        try connection.transaction { connection in
            if !records.isEmpty {
                try connection.execute(
                    """
                    INSERT INTO deliveries (position, app_id, outcome, attempt, apns_id, device_token, token_position,
                        channel_id, priority, status, reason, latency_us, attempted_at)
                    SELECT * FROM unnest(
                        \(PostgresArray(records.map(\.position))), \(PostgresArray(records.map(\.stream.app.rawValue))),
                        \(PostgresArray(records.map(\.outcome.rawValue))), \(PostgresArray(records.map(\.attempt))),
                        \(PostgresArray(records.map(\.apnsID)))::uuid[],
                        \(PostgresArray(records.map { $0.tokenPosition == nil ? $0.deviceToken : nil })),
                        \(PostgresArray(records.map(\.tokenPosition))),
                        \(PostgresArray(records.map(\.channelID))),
                        \(PostgresArray(records.map { $0.priority?.rawValue }))::smallint[],
                        \(PostgresArray(records.map(\.status))), \(PostgresArray(records.map(\.reason))),
                        \(PostgresArray(records.map { $0.latency?.microseconds })),
                        \(PostgresArray(records.map { PostgresTimestamp($0.attemptedAt) })))
                    """
                )
            }
            for invalidation in invalidations {
                if let slot = invalidation.pushToStart {
                    try connection.execute(
                        """
                        INSERT INTO push_to_start_token_changes (app_id, device_id, activity_type, change, token, status,
                            reason, invalid_since)
                        VALUES (\(slot.app.rawValue), \(slot.device.rawValue), \(slot.activityType), 'invalidated',
                            \(invalidation.deviceToken), \(invalidation.status), \(invalidation.reason),
                            \(PostgresTimestamp(invalidation.since)))
                        """
                    )
                    continue
                }
                try connection.execute(
                    """
                    INSERT INTO push_token_invalidations (app_id, activity_id, device_token, position, status, reason,
                        invalid_since)
                    VALUES (\(invalidation.stream.app.rawValue), \(invalidation.stream.activity.rawValue),
                        \(invalidation.deviceToken), \(invalidation.position), \(invalidation.status),
                        \(invalidation.reason), \(PostgresTimestamp(invalidation.since)))
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
            // Held pushes are locked in key order, as retirement locks those it removes.
            if !released.isEmpty {
                try connection.execute(
                    """
                    DELETE FROM delivery_holds h USING (
                        SELECT l.app_id, l.activity_id, l.position
                        FROM (SELECT * FROM unnest(\(PostgresArray(released.map(\.stream.app.rawValue))),
                                    \(PostgresArray(released.map(\.stream.activity.rawValue))),
                                    \(PostgresArray(released.map(\.position)))) ORDER BY 1, 2, 3)
                                AS r(app_id, activity_id, position),
                            LATERAL (SELECT h.app_id, h.activity_id, h.position FROM delivery_holds h
                                     WHERE h.app_id = r.app_id AND h.activity_id = r.activity_id
                                       AND h.position = r.position FOR UPDATE) AS l
                    ) AS r
                    WHERE h.app_id = r.app_id AND h.activity_id = r.activity_id AND h.position = r.position
                    """
                )
            }
            if !held.isEmpty {
                try connection.execute(
                    """
                    INSERT INTO delivery_holds (app_id, activity_id, position, starts_activity)
                    SELECT * FROM unnest(\(PostgresArray(held.map(\.stream.app.rawValue))),
                        \(PostgresArray(held.map(\.stream.activity.rawValue))), \(PostgresArray(held.map(\.position))),
                        \(PostgresArray(held.map(\.startsActivity))))
                    ORDER BY 1, 2, 3
                    ON CONFLICT DO NOTHING
                    """
                )
            }
            // Asked once per event: a worker that settles it again is answered with the first request.
            for reload in writes.reloads {
                _ = try ReloadQueries.request(
                    reload.target,
                    for: reload.stream.app,
                    from: .activity(reload.stream, version: reload.version),
                    connection
                )
            }
            try RemoteStartQueries.accept(writes.acceptedStarts, connection)
            if !cursors.isEmpty {
                try moveCursors(cursors, of: worker, releasing: false, connection)
            }
        }
    }

    /// Positions after `position` in `shards` whose delivery is already settled, so a worker
    /// that takes a shard over does not send them again; and among them, starts that were
    /// under way (`sending` last, with no outcome since) when their worker stopped. The stream of
    /// each (its shard) is its event's.
    static func settledPositions(
        after position: Int64,
        in shards: Set<Int>,
        _ connection: Connection
    ) throws -> (settled: Set<Int64>, interrupted: Set<Int64>) {
        var settled: Set<Int64> = []
        var interrupted: Set<Int64> = []
        for row in try connection.query(
            """
            SELECT d.position, e.app_id, e.activity_id, d.interrupted
            FROM (SELECT position, (array_agg(outcome ORDER BY id DESC))[1] = 'sending' AS interrupted
                  FROM deliveries WHERE position > \(position) AND outcome <> 'retrying'
                  GROUP BY position) d
            JOIN events e ON e.position = d.position
            """
        ) {
            guard shards.contains(DeliveryShard.of(try StreamID(row: row))) else { continue }
            let found = try row.decode("position", as: Int64.self)
            settled.insert(found)
            if try row.decode("interrupted", as: Bool.self) { interrupted.insert(found) }
        }
        return (settled, interrupted)
    }

    /// Each stream's events after a version and up to a position, in order, and the tokens
    /// APNs declared dead for those streams.
    static func histories(_ requests: [StreamID: HistoryRequest], _ connection: Connection) throws -> StreamHistories {
        let streams = Array(requests.keys)
        let apps = PostgresArray(streams.map(\.app.rawValue))
        let activities = PostgresArray(streams.map(\.activity.rawValue))
        var histories = StreamHistories()
        for row in try connection.query(
            """
            SELECT \(columnsOf: EventRow.Column.self, in: "e.")
            FROM unnest(\(apps), \(activities), \(PostgresArray(streams.map { requests[$0]!.afterVersion })),
                \(PostgresArray(streams.map { requests[$0]!.throughPosition })))
                AS w(app_id, activity_id, after_version, through_position)
            JOIN events e ON e.app_id = w.app_id AND e.activity_id = w.activity_id AND e.version > w.after_version
                AND e.position <= w.through_position
            ORDER BY e.app_id, e.activity_id, e.version
            """
        ) {
            let stored = try EventRow.storedEvent(row)
            histories.events[stored.stream, default: []].append(stored)
        }
        for row in try connection.query(
            """
            SELECT i.app_id, i.activity_id, i.device_token, max(i.invalid_since) AS invalid_since
            FROM unnest(\(apps), \(activities)) AS w(app_id, activity_id)
            JOIN push_token_invalidations i ON i.app_id = w.app_id AND i.activity_id = w.activity_id
            GROUP BY 1, 2, 3
            """
        ) {
            histories.invalidations[try StreamID(row: row), default: [:]][try row.decode("device_token")] = Timestamp(
                try row.decode("invalid_since", as: PostgresTimestamp.self)
            )
        }
        return histories
    }

    /// The pushes held for suspended apps, in `shards`, each with whether it is a start that was
    /// offered again and under way (`sending` last) when its worker stopped.
    static func holds(in shards: Set<Int>, _ connection: Connection) throws -> [Hold] {
        try connection.query(
            """
            SELECT h.app_id, h.activity_id, h.position, h.starts_activity,
                h.starts_activity AND coalesce((
                    SELECT d.outcome = 'sending' FROM deliveries d
                    WHERE d.position = h.position AND d.outcome <> 'retrying' ORDER BY d.id DESC LIMIT 1), false)
                AS under_way
            FROM delivery_holds h
            """
        ).compactMap { row in
            let stream = try StreamID(row: row)
            guard shards.contains(DeliveryShard.of(stream)) else { return nil }
            return Hold(
                stream: stream,
                position: try row.decode("position"),
                startsActivity: try row.decode("starts_activity"),
                underWay: try row.decode("under_way")
            )
        }
    }

    /// The app's bundle id, when its credentials were set, and the credentials a suspension names
    /// (the latest).
    static func appDelivery(of app: AppID, _ connection: Connection) throws -> AppDeliverySettings? {
        try connection.query(
            """
            SELECT a.bundle_id, c.updated_at AS credentials_updated_at,
                (SELECT s.credentials_updated_at FROM delivery_suspensions s WHERE s.app_id = a.app_id
                 ORDER BY s.id DESC LIMIT 1) AS suspended_credentials
            FROM apps a LEFT JOIN apns_credentials c ON c.app_id = a.app_id
            WHERE a.app_id = \(app.rawValue)
            """
        ).single.map { row in
            AppDeliverySettings(
                bundleID: try row.decode("bundle_id"),
                credentialsUpdatedAt: try row.decode("credentials_updated_at", as: PostgresTimestamp?.self)
                    .map(Timestamp.init),
                suspendedCredentials: try row.decode("suspended_credentials", as: PostgresTimestamp?.self)
                    .map(Timestamp.init)
            )
        }
    }

    /// An activity's deliveries, newest first: those of its events (found by their stream key),
    /// in the deliveries' partitions from the stream's beginning on (bounded by the event's
    /// column, so that the partitions before it are skipped as the query runs), each with the
    /// token it went to (from the event that registered it, when the row names one).
    static func deliveries(of stream: StreamID, limit: Int, _ connection: Connection) throws -> [DeliveryRecord] {
        try connection.query(
            """
            SELECT d.position, e.version, d.outcome, d.attempt, d.apns_id::text,
                coalesce(d.device_token, lower(t.data ->> 'pushToken')) AS device_token, d.token_position,
                d.priority::int, d.status, d.reason, d.latency_us, d.attempted_at, d.channel_id
            FROM activities a
            JOIN events e ON e.app_id = a.app_id AND e.activity_id = a.activity_id
                AND e.stream_recorded_at = a.stream_recorded_at
            JOIN deliveries d ON d.position = e.position AND d.recorded_at >= e.stream_recorded_at
            LEFT JOIN events t ON t.position = d.token_position AND t.stream_recorded_at = a.stream_recorded_at
            WHERE a.app_id = \(stream.app.rawValue) AND a.activity_id = \(stream.activity.rawValue)
            ORDER BY d.id DESC LIMIT \(limit)
            """
        ).map { row in
            try record(row, of: stream, version: try row.decode("version"), deviceToken: try row.decode("device_token"))
        }
    }

    /// The deliveries of `delivered`'s events that the live table still holds (its stream's
    /// events may be retired already), newest first, at most `limit`.
    static func deliveries(
        of delivered: DeliveredStream,
        limit: Int,
        _ connection: Connection
    ) throws
        -> [DeliveryRecord]
    {
        try connection.query(
            """
            SELECT position, outcome, attempt, apns_id::text, device_token, token_position, priority::int, status,
                reason, latency_us, attempted_at, channel_id
            FROM deliveries
            WHERE position = ANY (\(PostgresArray(delivered.positions)))
                AND recorded_at >= \(PostgresTimestamp(delivered.since))
            ORDER BY id DESC LIMIT \(limit)
            """
        ).compactMap { row in
            guard let version = delivered.version(at: try row.decode("position")) else { return nil }
            return try record(
                row,
                of: delivered.stream,
                version: version,
                deviceToken: delivered.deviceToken(
                    recorded: try row.decode("device_token"),
                    registeredAt: try row.decode("token_position"),
                    position: try row.decode("position")
                )
            )
        }
    }

    private static func record(
        _ row: PostgresRow,
        of stream: StreamID,
        version: Int,
        deviceToken: String?
    ) throws
        -> DeliveryRecord
    {
        DeliveryRecord(
            position: try row.decode("position"),
            stream: stream,
            version: version,
            outcome: try DeliveryRecord.Outcome(stored: try row.decode("outcome")),
            attempt: try row.decode("attempt"),
            apnsID: try row.decode("apns_id"),
            deviceToken: deviceToken,
            tokenPosition: try row.decode("token_position"),
            channelID: try row.decode("channel_id"),
            priority: try row.decode("priority", as: Int?.self).flatMap(Priority.init(rawValue:)),
            status: try row.decode("status"),
            reason: try row.decode("reason"),
            latency: try row.decode("latency_us", as: Int64?.self).map { .microseconds($0) },
            attemptedAt: Timestamp(try row.decode("attempted_at", as: PostgresTimestamp.self))
        )
    }
}

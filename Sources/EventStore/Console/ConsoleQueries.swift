import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of the support console's reads: search, a device's page, an app's health.
enum ConsoleQueries {
    /// `text` lowercased when it can begin a token: eight hexadecimal digits at least.
    static func tokenPrefix(_ text: String) -> String? {
        guard text.utf8.count >= 8, text.utf8.count <= 200, text.allSatisfy({ $0.isASCII && $0.isHexDigit }) else {
            return nil
        }
        return text.lowercased()
    }

    static func activities(
        withID activity: ActivityID,
        in apps: [AppID],
        _ connection: Connection
    ) throws
        -> [StoredActivity]
    {
        try connection.query(
            """
            SELECT * FROM liveline_activity_rows
            WHERE app_id = ANY(\(PostgresArray(apps.map(\.rawValue)))::text[]) AND activity_id = \(activity.rawValue)
            ORDER BY app_id
            """
        ).compactMap { try ProjectionRow.stored(from: $0, at: 0) }
    }

    /// Activities whose push token begins with `prefix`, newest first: a scan of the apps'
    /// projections, which no index on tokens slows down as they change.
    static func activities(
        withTokenPrefix prefix: String,
        in apps: [AppID],
        _ connection: Connection
    ) throws
        -> [StoredActivity]
    {
        try connection.query(
            """
            SELECT * FROM liveline_activity_rows
            WHERE app_id = ANY(\(PostgresArray(apps.map(\.rawValue)))::text[])
              AND starts_with(lower(push_token), \(prefix))
            ORDER BY requested_at DESC LIMIT \(literal: EventStore.consoleSearchLimit)
            """
        ).compactMap { try ProjectionRow.stored(from: $0, at: 0) }
    }

    static func devices(withID device: DeviceID, in apps: [AppID], _ connection: Connection) throws -> [DeviceMatch] {
        let apps = PostgresArray(apps.map(\.rawValue))
        return try connection.query(
            """
            SELECT app_id, device_id FROM activities WHERE app_id = ANY(\(apps)::text[]) AND device_id = \(device.rawValue)
            UNION
            SELECT app_id, device_id FROM push_to_start_token_changes
            WHERE app_id = ANY(\(apps)::text[]) AND device_id = \(device.rawValue)
            UNION
            SELECT app_id, device_id FROM reload_tokens WHERE app_id = ANY(\(apps)::text[]) AND device_id = \(device.rawValue)
            ORDER BY 1
            """
        ).map(match)
    }

    /// Devices that registered a push-to-start, widget or control token beginning with `prefix`,
    /// or whose activity has a push token that does.
    static func devices(
        withTokenPrefix prefix: String,
        in apps: [AppID],
        _ connection: Connection
    ) throws
        -> [DeviceMatch]
    {
        let apps = PostgresArray(apps.map(\.rawValue))
        return try connection.query(
            """
            SELECT app_id, device_id FROM activities
            WHERE app_id = ANY(\(apps)::text[]) AND device_id IS NOT NULL AND starts_with(lower(push_token), \(prefix))
            UNION
            SELECT app_id, device_id FROM push_to_start_token_changes
            WHERE app_id = ANY(\(apps)::text[]) AND starts_with(lower(token), \(prefix))
            UNION
            SELECT app_id, device_id FROM reload_tokens
            WHERE app_id = ANY(\(apps)::text[]) AND starts_with(lower(token), \(prefix))
            ORDER BY 1, 2 LIMIT \(literal: EventStore.consoleSearchLimit)
            """
        ).map(match)
    }

    private static func match(_ row: PostgresRow) throws -> DeviceMatch {
        DeviceMatch(
            app: AppID(uncheckedRawValue: try row.decode("app_id")),
            device: DeviceID(uncheckedRawValue: try row.decode("device_id"))
        )
    }

    static func activities(
        of device: DeviceID,
        in app: AppID,
        limit: Int,
        _ connection: Connection
    ) throws
        -> [StoredActivity]
    {
        try connection.query(
            """
            SELECT * FROM liveline_activity_rows WHERE app_id = \(app.rawValue) AND device_id = \(device.rawValue)
            ORDER BY requested_at DESC, activity_id LIMIT \(literal: limit)
            """
        ).compactMap { try ProjectionRow.stored(from: $0, at: 0) }
    }

    /// The activity types the device ever registered a push-to-start token for.
    static func pushToStartTypes(of device: DeviceID, in app: AppID, _ connection: Connection) throws -> [String] {
        try connection.query(
            """
            SELECT DISTINCT activity_type FROM push_to_start_token_changes
            WHERE app_id = \(app.rawValue) AND device_id = \(device.rawValue) ORDER BY 1
            """
        ).map { try $0.decode("activity_type") }
    }

    /// The kinds of the device's widget and control tokens.
    static func reloadKinds(of device: DeviceID, in app: AppID, _ connection: Connection) throws -> [ReloadKind] {
        try connection.query(
            """
            SELECT push_type, control_kind FROM reload_tokens
            WHERE app_id = \(app.rawValue) AND device_id = \(device.rawValue) ORDER BY 1, 2
            """
        ).compactMap { ReloadKind(pushType: try $0.decode("push_type"), controlKind: try $0.decode("control_kind")) }
    }

    static func starts(
        to device: DeviceID,
        of app: AppID,
        limit: Int,
        _ connection: Connection
    ) throws
        -> [RecordedStart]
    {
        try connection.query(
            """
            SELECT activity_id, activity_type, token, accepted_at, verdict FROM remote_starts
            WHERE app_id = \(app.rawValue) AND device_id = \(device.rawValue)
            ORDER BY accepted_at DESC LIMIT \(literal: limit)
            """
        ).map { row in
            RecordedStart(
                activity: ActivityID(uncheckedRawValue: try row.decode("activity_id")),
                activityType: try row.decode("activity_type"),
                token: try row.decode("token"),
                acceptedAt: Timestamp(try row.decode("accepted_at", as: PostgresTimestamp.self)),
                verdict: try row.decode("verdict", as: String?.self).flatMap(StartVerdict.init(rawValue:))
            )
        }
    }

    /// The app's health, read in one transaction whose statements stop after 10 s (the last
    /// hour of deliveries is a scan of that hour's rows).
    static func health(of app: AppID, _ connection: Connection) throws -> AppHealth? {
        try connection.transaction { connection in
            try connection.execute("SET LOCAL statement_timeout = '10s'")
            guard let settings = try AppQueries.appSettings(app, connection) else { return nil }
            let open = try AppQueries.openCounts(of: app, connection)
            let counts = try connection.query(
                """
                SELECT (SELECT global_max_open FROM service_limits) AS service_max_open,
                    (SELECT count(*) FROM delivery_holds WHERE app_id = \(app.rawValue)) AS held,
                    (SELECT count(*) FROM remote_starts WHERE app_id = \(app.rawValue) AND verdict IS NULL) AS waiting
                """
            ).single!
            let busiest = try connection.query(
                """
                SELECT device_id, open FROM device_open_counts WHERE app_id = \(app.rawValue) AND open > 0
                ORDER BY open DESC, device_id LIMIT 5
                """
            ).map {
                (
                    device: DeviceID(uncheckedRawValue: try $0.decode("device_id")),
                    open: Int(try $0.decode("open", as: Int32.self))
                )
            }
            let deliveries = try connection.query(
                """
                SELECT outcome, count(*) AS attempts FROM (
                    SELECT outcome FROM deliveries
                    WHERE recorded_at > now() - interval '1 hour' AND app_id = \(app.rawValue)
                    UNION ALL
                    SELECT outcome FROM reload_deliveries
                    WHERE recorded_at > now() - interval '1 hour' AND app_id = \(app.rawValue)
                ) AS attempt GROUP BY outcome
                """
            )
            let verdicts = try connection.query(
                """
                SELECT verdict, count(*) AS starts FROM remote_starts
                WHERE app_id = \(app.rawValue) AND settled_at > now() - interval '1 day' GROUP BY verdict
                """
            )
            let credentials = try APNsCredentialQueries.summary(of: app, connection)
            let suspension = try connection.query(
                """
                SELECT status, reason, suspended_at, credentials_updated_at FROM delivery_suspensions
                WHERE app_id = \(app.rawValue) ORDER BY id DESC LIMIT 1
                """
            ).single.map { row in
                AppHealth.Suspension(
                    status: try row.decode("status"),
                    reason: try row.decode("reason"),
                    suspendedAt: Timestamp(try row.decode("suspended_at", as: PostgresTimestamp.self)),
                    isCurrent: try credentials?.updatedAt
                        == Timestamp(row.decode("credentials_updated_at", as: PostgresTimestamp.self))
                )
            }
            return AppHealth(
                settings: settings,
                openActivities: open.app,
                openInService: open.global,
                serviceMaxOpen: try counts.decode("service_max_open"),
                busiestDevices: busiest,
                deliveriesLastHour: Dictionary(
                    uniqueKeysWithValues: try deliveries.map { (try $0.decode("outcome"), try $0.decode("attempts")) }
                ),
                credentials: credentials,
                suspension: suspension,
                heldPushes: try counts.decode("held"),
                startsWaiting: try counts.decode("waiting"),
                startVerdictsLastDay: Dictionary(
                    uniqueKeysWithValues: try verdicts.compactMap { row in
                        try StartVerdict(rawValue: row.decode("verdict")).map { ($0, try row.decode("starts")) }
                    }
                )
            )
        }
    }
}

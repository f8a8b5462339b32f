import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of apps and the global cap: settings, caps spread over their stripes, open counts.
enum AppQueries {
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

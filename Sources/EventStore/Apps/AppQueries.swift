import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of apps and the global cap: settings, caps spread over their stripes, open counts.
enum AppQueries {
    static func createApp(_ app: AppID, _ settings: AppSettings, _ connection: Connection) throws {
        try connection.execute(
            """
            INSERT INTO apps (app_id, bundle_id, max_open, max_open_per_device, priority_budget_per_hour, frequent_updates,
                push_to_start_budget_per_hour, widget_reload_interval_seconds, control_reload_interval_seconds)
            VALUES (\(app.rawValue), \(settings.bundleID), \(Int32(clamping: settings.maxOpen)),
                    \(settings.maxOpenPerDevice.map { Int32(clamping: $0) }), \(Int32(clamping: settings.priorityBudgetPerHour)),
                    \(settings.frequentUpdates), \(Int32(clamping: settings.pushToStartBudgetPerHour)),
                    \(Int32(clamping: settings.widgetReloadIntervalSeconds)),
                    \(Int32(clamping: settings.controlReloadIntervalSeconds)))
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
                frequent_updates = \(settings.frequentUpdates),
                push_to_start_budget_per_hour = \(Int32(clamping: settings.pushToStartBudgetPerHour)),
                widget_reload_interval_seconds = \(Int32(clamping: settings.widgetReloadIntervalSeconds)),
                control_reload_interval_seconds = \(Int32(clamping: settings.controlReloadIntervalSeconds))
            WHERE app_id = \(app.rawValue)
            """
        ) == 1
    }

    static func appSettings(_ app: AppID, _ connection: Connection) throws -> AppSettings? {
        try connection.query(
            """
            SELECT \(columnsOf: SettingsColumn.self) FROM apps WHERE app_id = \(app.rawValue)
            """
        ).single.map(settings)
    }

    static func apps(only app: AppID?, _ connection: Connection) throws -> [AppSummary] {
        try connection.query(
            """
            SELECT \(columnsOf: SettingsColumn.self, in: "a."), a.app_id,
                   coalesce((SELECT sum(open) FROM app_open_stripes s WHERE s.app_id = a.app_id), 0)::bigint AS open
            FROM apps a
            WHERE \(app?.rawValue)::text IS NULL OR a.app_id = \(app?.rawValue)
            ORDER BY a.app_id
            """
        ).map { row in
            AppSummary(
                app: AppID(uncheckedRawValue: try row.decode("app_id")),
                settings: try settings(row),
                openActivities: try row.decode("open")
            )
        }
    }

    /// The columns an app's settings are read from, in order.
    enum SettingsColumn: Int, SQLColumns {
        case bundleID, maxOpen, maxOpenPerDevice, priorityBudgetPerHour, frequentUpdates, pushToStartBudgetPerHour
        case widgetReloadIntervalSeconds, controlReloadIntervalSeconds

        var sql: StaticString {
            switch self {
            case .bundleID: "bundle_id"
            case .maxOpen: "max_open"
            case .maxOpenPerDevice: "max_open_per_device"
            case .priorityBudgetPerHour: "priority_budget_per_hour"
            case .frequentUpdates: "frequent_updates"
            case .pushToStartBudgetPerHour: "push_to_start_budget_per_hour"
            case .widgetReloadIntervalSeconds: "widget_reload_interval_seconds"
            case .controlReloadIntervalSeconds: "control_reload_interval_seconds"
            }
        }
    }

    /// An app's settings from `SettingsColumn`'s columns, the first of the row.
    private static func settings(_ row: PostgresRow) throws -> AppSettings {
        AppSettings(
            bundleID: try row.decode(SettingsColumn.bundleID),
            maxOpen: try row.decode(SettingsColumn.maxOpen),
            maxOpenPerDevice: try row.decode(SettingsColumn.maxOpenPerDevice),
            priorityBudgetPerHour: try row.decode(SettingsColumn.priorityBudgetPerHour),
            frequentUpdates: try row.decode(SettingsColumn.frequentUpdates),
            pushToStartBudgetPerHour: try row.decode(SettingsColumn.pushToStartBudgetPerHour),
            widgetReloadIntervalSeconds: try row.decode(SettingsColumn.widgetReloadIntervalSeconds),
            controlReloadIntervalSeconds: try row.decode(SettingsColumn.controlReloadIntervalSeconds)
        )
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
            SELECT (SELECT sum(open) FROM app_open_stripes WHERE app_id = \(app.rawValue))::bigint AS app_open,
                   (SELECT sum(open) FROM global_open_stripes)::bigint AS global_open
            """
        ).single
        return (try row?.decode("app_open", as: Int?.self) ?? 0, try row?.decode("global_open", as: Int?.self) ?? 0)
    }
}

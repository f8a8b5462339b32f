package import ActivityLifecycle
package import Postgres

extension StreamID {
    /// The stream a row names in its `app_id` and `activity_id` columns (read from the log, so
    /// already valid identifiers).
    package init(row: PostgresRow) throws {
        self.init(
            app: AppID(uncheckedRawValue: try row.decode("app_id")),
            activity: ActivityID(uncheckedRawValue: try row.decode("activity_id"))
        )
    }
}

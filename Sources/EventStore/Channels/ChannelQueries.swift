import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of broadcast channels (`broadcast_channels`).
enum ChannelQueries {
    /// Records a channel APNs created; `nil` when there is no such app.
    static func insert(
        app: AppID,
        id: String,
        environment: APNsEnvironment,
        storagePolicy: MessageStoragePolicy,
        _ connection: Connection
    ) throws -> StoredChannel? {
        try connection.query(
            """
            INSERT INTO broadcast_channels (app_id, channel_id, environment, message_storage_policy)
            SELECT app_id, \(id), \(environment.rawValue), \(storagePolicy.rawValue) FROM apps
            WHERE app_id = \(app.rawValue)
            RETURNING \(columnsOf: Column.self)
            """
        ).single.map(channel)
    }

    /// Marks the channel deleted; `nil` when the app has no such channel that is not deleted.
    static func markDeleted(app: AppID, id: String, _ connection: Connection) throws -> StoredChannel? {
        try connection.query(
            """
            UPDATE broadcast_channels SET deleted_at = now()
            WHERE app_id = \(app.rawValue) AND channel_id = \(id) AND deleted_at IS NULL
            RETURNING \(columnsOf: Column.self)
            """
        ).single.map(channel)
    }

    static func channel(app: AppID, id: String, _ connection: Connection) throws -> StoredChannel? {
        try connection.query(
            """
            SELECT \(columnsOf: Column.self) FROM broadcast_channels
            WHERE app_id = \(app.rawValue) AND channel_id = \(id)
            """
        ).single.map(channel)
    }

    /// The app's channels that are not deleted, oldest first.
    static func channels(of app: AppID, _ connection: Connection) throws -> [StoredChannel] {
        try connection.query(
            """
            SELECT \(columnsOf: Column.self) FROM broadcast_channels
            WHERE app_id = \(app.rawValue) AND deleted_at IS NULL ORDER BY created_at, channel_id
            """
        ).map(channel)
    }

    enum Column: Int, SQLColumns {
        case app, id, environment, storagePolicy, createdAt, deletedAt

        var sql: StaticString {
            switch self {
            case .app: "app_id"
            case .id: "channel_id"
            case .environment: "environment"
            case .storagePolicy: "message_storage_policy"
            case .createdAt: "created_at"
            case .deletedAt: "deleted_at"
            }
        }
    }

    private static func channel(_ row: PostgresRow) throws -> StoredChannel {
        let environment = try row.decode(Column.environment, as: String.self)
        let policy = try row.decode(Column.storagePolicy, as: String.self)
        guard let knownEnvironment = APNsEnvironment(rawValue: environment),
            let knownPolicy = MessageStoragePolicy(rawValue: policy)
        else {
            throw EventStoreError.unreadableRow("broadcast_channels: environment \(environment), policy \(policy)")
        }
        return StoredChannel(
            app: AppID(uncheckedRawValue: try row.decode(Column.app)),
            id: try row.decode(Column.id),
            environment: knownEnvironment,
            storagePolicy: knownPolicy,
            createdAt: Timestamp(try row.decode(Column.createdAt, as: PostgresTimestamp.self)),
            deletedAt: try row.decode(Column.deletedAt, as: PostgresTimestamp?.self).map(Timestamp.init)
        )
    }
}

import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of apps' APNs credentials.
enum APNsCredentialQueries {
    /// Inserts or replaces the app's credentials; `nil` when there is no such app. Every process
    /// hears of it when the transaction commits (`AppendListener.credentialsGeneration`).
    static func upsert(
        _ app: AppID,
        teamID: String,
        keyID: String,
        environment: APNsEnvironment,
        sealedPrivateKey: [UInt8],
        publicKeySHA256: [UInt8],
        _ connection: Connection
    ) throws -> APNsCredentialSummary? {
        try connection.query(
            """
            INSERT INTO apns_credentials (app_id, team_id, key_id, environment, sealed_private_key, public_key_sha256)
            SELECT app_id, \(teamID), \(keyID), \(environment.rawValue), \(sealedPrivateKey), \(publicKeySHA256)
            FROM apps WHERE app_id = \(app.rawValue)
            ON CONFLICT (app_id) DO UPDATE SET team_id = excluded.team_id, key_id = excluded.key_id,
                environment = excluded.environment, sealed_private_key = excluded.sealed_private_key,
                public_key_sha256 = excluded.public_key_sha256, updated_at = now()
            RETURNING \(columnsOf: SummaryColumn.self)
            """
        ).single.map(summary).map { summary in
            try announceChange(of: app, connection)
            return summary
        }
    }

    static func delete(_ app: AppID, _ connection: Connection) throws -> Bool {
        let deleted = try connection.execute("DELETE FROM apns_credentials WHERE app_id = \(app.rawValue)") == 1
        if deleted { try announceChange(of: app, connection) }
        return deleted
    }

    /// Tells every Liveline process, at commit, that the app's credentials changed.
    private static func announceChange(of app: AppID, _ connection: Connection) throws {
        try connection.execute("SELECT pg_notify(\(AppendListener.credentialsChannel), \(app.rawValue))")
    }

    static func summary(of app: AppID, _ connection: Connection) throws -> APNsCredentialSummary? {
        try connection.query(
            "SELECT \(columnsOf: SummaryColumn.self) FROM apns_credentials WHERE app_id = \(app.rawValue)"
        ).single.map(summary)
    }

    /// The summary and the sealed private key.
    static func sealed(of app: AppID, _ connection: Connection) throws -> (APNsCredentialSummary, [UInt8])? {
        try connection.query(
            """
            SELECT \(columnsOf: SummaryColumn.self), sealed_private_key FROM apns_credentials
            WHERE app_id = \(app.rawValue)
            """
        ).single.map { row in (try summary(row), try row.decode(SummaryColumn.allCases.count)) }
    }

    /// The columns a summary is read from, in order.
    enum SummaryColumn: Int, SQLColumns {
        case app, teamID, keyID, environment, publicKeySHA256, updatedAt

        var sql: StaticString {
            switch self {
            case .app: "app_id"
            case .teamID: "team_id"
            case .keyID: "key_id"
            case .environment: "environment"
            case .publicKeySHA256: "public_key_sha256"
            case .updatedAt: "updated_at"
            }
        }
    }

    private static func summary(_ row: PostgresRow) throws -> APNsCredentialSummary {
        let environment = try row.decode(SummaryColumn.environment, as: String.self)
        guard let known = APNsEnvironment(rawValue: environment) else {
            throw EventStoreError.unreadableRow("apns_credentials: environment \(environment)")
        }
        return APNsCredentialSummary(
            app: AppID(uncheckedRawValue: try row.decode(SummaryColumn.app)),
            teamID: try row.decode(SummaryColumn.teamID),
            keyID: try row.decode(SummaryColumn.keyID),
            environment: known,
            publicKeySHA256: try row.decode(SummaryColumn.publicKeySHA256, as: [UInt8].self).hexadecimal,
            updatedAt: Timestamp(try row.decode(SummaryColumn.updatedAt, as: PostgresTimestamp.self))
        )
    }
}

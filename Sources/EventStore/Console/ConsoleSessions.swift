public import ActivityLifecycle
public import CanonicalJSON
public import Foundation
import Postgres

/// Who a support console session shows the log to: the admin (every app) or one app.
public enum ConsoleViewer: Hashable, Sendable {
    case admin
    case app(AppID)

    /// Whether the viewer may read `app`'s activities.
    public func reads(_ app: AppID) -> Bool {
        switch self {
        case .admin: true
        case .app(let own): own == app
        }
    }
}

/// The key a console session was opened with, as the session keeps it: the digest of the admin
/// key, or an app's key by its id (so that revoking the key ends the session).
public enum ConsoleSessionKey: Hashable, Sendable {
    case admin(keyDigest: [UInt8])
    case app(AppID, keyID: UUID)
}

/// A console session that is still open.
public struct ConsoleSession: Hashable, Sendable {
    public let viewer: ConsoleViewer
    /// The token the session's forms carry back.
    public let csrfToken: String
    public let expiresAt: Timestamp
}

extension EventStore {
    /// Opens a console session under the SHA-256 `digest` of its token, until `expiresAt`, and
    /// deletes the sessions that have expired.
    public func openConsoleSession(
        digest: [UInt8],
        key: ConsoleSessionKey,
        csrfToken: String,
        expiresAt: Timestamp
    ) async throws {
        try await withTransaction { connection in
            try ConsoleSessionQueries.deleteExpired(connection)
            try ConsoleSessionQueries.open(
                digest: digest,
                key: key,
                csrfToken: csrfToken,
                expiresAt: expiresAt,
                connection
            )
        }
    }

    /// The open session whose token has `digest`: `nil` when there is none, it expired, its app
    /// key was revoked, or it was opened with an admin key other than `adminKeyDigest` (or the
    /// admin key is off).
    public func consoleSession(digest: [UInt8], adminKeyDigest: [UInt8]?) async throws -> ConsoleSession? {
        try await withConnection {
            try ConsoleSessionQueries.session(digest: digest, adminKeyDigest: adminKeyDigest, $0)
        }
    }

    /// Ends the session whose token has `digest`, if it is open.
    public func closeConsoleSession(digest: [UInt8]) async throws {
        try await withConnection { try ConsoleSessionQueries.close(digest: digest, $0) }
    }

    /// Records in the audit trail that an admin revealed the content of `stream` in the console.
    public func recordContentRevealed(of stream: StreamID, by actor: AdminActor) async throws {
        try await withConnection { try ConsoleSessionQueries.recordRevealed(stream, actor: actor, $0) }
    }
}

/// The SQL of console sessions (`console_sessions`) and of the reveals they record.
enum ConsoleSessionQueries {
    static func deleteExpired(_ connection: Connection) throws {
        try connection.execute("DELETE FROM console_sessions WHERE expires_at <= now()")
    }

    static func open(
        digest: [UInt8],
        key: ConsoleSessionKey,
        csrfToken: String,
        expiresAt: Timestamp,
        _ connection: Connection
    ) throws {
        let (app, keyID, adminDigest): (String?, UUID?, [UInt8]?) =
            switch key {
            case .admin(let digest): (nil, nil, digest)
            case .app(let app, let keyID): (app.rawValue, keyID, nil)
            }
        try connection.execute(
            """
            INSERT INTO console_sessions (session_sha256, app_id, key_id, admin_key_sha256, csrf_token, expires_at)
            VALUES (\(digest), \(app), \(keyID), \(adminDigest), \(csrfToken), \(PostgresTimestamp(expiresAt)))
            """
        )
    }

    static func session(
        digest: [UInt8],
        adminKeyDigest: [UInt8]?,
        _ connection: Connection
    ) throws
        -> ConsoleSession?
    {
        try connection.query(
            """
            SELECT s.app_id, s.csrf_token, s.expires_at
            FROM console_sessions s LEFT JOIN api_keys k ON k.key_id = s.key_id
            WHERE s.session_sha256 = \(digest) AND s.expires_at > now()
              AND (k.key_id IS NOT NULL AND k.revoked_at IS NULL
                   OR s.admin_key_sha256 = \(adminKeyDigest))
            """
        ).single.map { row in
            ConsoleSession(
                viewer: try row.decode("app_id", as: String?.self).map { .app(AppID(uncheckedRawValue: $0)) }
                    ?? .admin,
                csrfToken: try row.decode("csrf_token"),
                expiresAt: Timestamp(try row.decode("expires_at", as: PostgresTimestamp.self))
            )
        }
    }

    static func close(digest: [UInt8], _ connection: Connection) throws {
        try connection.execute("DELETE FROM console_sessions WHERE session_sha256 = \(digest)")
    }

    static func recordRevealed(_ stream: StreamID, actor: AdminActor, _ connection: Connection) throws {
        try connection.execute(
            """
            INSERT INTO admin_changes (actor, action, app_id, details)
            VALUES (\(actor.rawValue), 'content.revealed', \(stream.app.rawValue),
                jsonb_build_object('activityId', \(stream.activity.rawValue)::text))
            """
        )
    }
}

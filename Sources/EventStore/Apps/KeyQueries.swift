import ActivityLifecycle
import CanonicalJSON
import Foundation
import Postgres

/// The SQL of API keys: stored as SHA-256 digests, revoked by time.
enum KeyQueries {
    static func insertKey(_ keyID: UUID, of app: AppID, secretDigest: [UInt8], _ connection: Connection) throws {
        try connection.execute(
            """
            INSERT INTO api_keys (key_id, app_id, secret_sha256)
            VALUES (\(keyID), \(app.rawValue), \(secretDigest))
            """
        )
    }

    static func revokeKey(_ keyID: UUID, of app: AppID, _ connection: Connection) throws -> Bool {
        try connection.query(
            """
            UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
            WHERE key_id = \(keyID) AND app_id = \(app.rawValue)
            RETURNING key_id
            """
        ).single != nil
    }

    static func keyHolder(secretDigest: [UInt8], _ connection: Connection) throws -> KeyHolder? {
        try connection.query(
            """
            SELECT key_id, app_id FROM api_keys
            WHERE secret_sha256 = \(secretDigest) AND revoked_at IS NULL
            """
        ).single.map { row in
            KeyHolder(keyID: try row.decode("key_id"), app: AppID(uncheckedRawValue: try row.decode("app_id")))
        }
    }
}

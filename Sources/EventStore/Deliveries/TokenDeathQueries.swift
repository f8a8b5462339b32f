import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of dead tokens: the invalidations of an activity's tokens, and of the push-to-start
/// token its remote start went to.
enum TokenDeathQueries {
    /// APNs' verdicts on the activity's push tokens, and on the push-to-start token its remote
    /// start went to (recorded in the device's slot after the request).
    static func deaths(
        of stream: StreamID,
        remoteStart: (slot: PushToStartSlot, token: String, requestedAt: Timestamp)?,
        _ connection: Connection
    ) throws -> [TokenDeath] {
        var deaths = try connection.query(
            """
            SELECT device_token, status, reason, invalid_since, recorded_at FROM push_token_invalidations
            WHERE app_id = \(stream.app.rawValue) AND activity_id = \(stream.activity.rawValue)
            ORDER BY id
            """
        ).map(death)
        if let remoteStart {
            let slot = remoteStart.slot
            deaths += try connection.query(
                """
                SELECT token AS device_token, status, reason, invalid_since, changed_at AS recorded_at
                FROM push_to_start_token_changes
                WHERE app_id = \(slot.app.rawValue) AND device_id = \(slot.device.rawValue)
                    AND activity_type = \(slot.activityType) AND change = 'invalidated' AND token = \(remoteStart.token)
                    AND changed_at >= \(PostgresTimestamp(remoteStart.requestedAt))
                ORDER BY id
                """
            ).map(death)
        }
        return deaths
    }

    private static func death(_ row: PostgresRow) throws -> TokenDeath {
        TokenDeath(
            token: try row.decode("device_token"),
            status: try row.decode("status"),
            reason: try row.decode("reason"),
            invalidSince: Timestamp(try row.decode("invalid_since", as: PostgresTimestamp.self)),
            recordedAt: Timestamp(try row.decode("recorded_at", as: PostgresTimestamp.self))
        )
    }
}

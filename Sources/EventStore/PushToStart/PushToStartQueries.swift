import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The SQL of push-to-start tokens: changes appended to `push_to_start_token_changes`, the current
/// token read from the `push_to_start_tokens` view.
enum PushToStartQueries {
    /// How many of a slot's latest changes are read back.
    static let historyLimit = 50

    /// Appends a registration of `token`, unless it is the slot's current token already; `true`
    /// when it appended one.
    static func register(_ token: String, for slot: PushToStartSlot, _ connection: Connection) throws -> Bool {
        try connection.execute(
            """
            INSERT INTO push_to_start_token_changes (app_id, device_id, activity_type, change, token)
            SELECT \(slot.app.rawValue), \(slot.device.rawValue), \(slot.activityType), 'registered', \(token)
            WHERE NOT EXISTS (
                SELECT FROM push_to_start_tokens
                WHERE app_id = \(slot.app.rawValue) AND device_id = \(slot.device.rawValue)
                    AND activity_type = \(slot.activityType) AND token = \(token))
            """
        ) == 1
    }

    /// Appends a removal when the slot has a current token; `false` when it had none.
    static func remove(_ slot: PushToStartSlot, _ connection: Connection) throws -> Bool {
        try connection.execute(
            """
            INSERT INTO push_to_start_token_changes (app_id, device_id, activity_type, change)
            SELECT app_id, device_id, activity_type, 'removed' FROM push_to_start_tokens
            WHERE app_id = \(slot.app.rawValue) AND device_id = \(slot.device.rawValue)
                AND activity_type = \(slot.activityType)
            """
        ) == 1
    }

    /// The slot's current token and its latest changes, in one statement (one snapshot), with
    /// how many starts to the current token went unconfirmed in a row (suspect from
    /// `suspectAfter`); `nil` when it never had a token.
    static func token(
        of slot: PushToStartSlot,
        suspectAfter: Int,
        _ connection: Connection
    ) throws -> PushToStartToken? {
        let rows = try connection.query(
            """
            SELECT change.change, change.token, NULL::jsonb AS widgets, change.status, change.reason, change.invalid_since,
                change.changed_at, current.token AS current_token, current.registered_at
            FROM (
                SELECT * FROM push_to_start_token_changes
                WHERE app_id = \(slot.app.rawValue) AND device_id = \(slot.device.rawValue)
                    AND activity_type = \(slot.activityType)
                ORDER BY id DESC LIMIT \(historyLimit)
            ) AS change
            LEFT JOIN push_to_start_tokens AS current USING (app_id, device_id, activity_type)
            ORDER BY change.id
            """
        )
        guard let first = rows.first else { return nil }
        let current = try first.decode("current_token", as: String?.self).map { token in
            // Starts are recorded with the token as it went: in lowercase.
            let run = try RemoteStartQueries.unconfirmedInARow(
                through: [(slot, token.lowercased(), nil)],
                connection
            )[0]
            return PushToStartToken.Registration(
                token: token,
                registeredAt: Timestamp(try first.decode("registered_at", as: PostgresTimestamp.self)),
                unconfirmedStartsInARow: run,
                isSuspect: run >= suspectAfter
            )
        }
        return PushToStartToken(slot: slot, current: current, changes: try rows.map(TokenChange.init(row:)))
    }
}

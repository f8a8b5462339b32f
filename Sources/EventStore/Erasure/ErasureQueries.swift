import ActivityLifecycle
import CanonicalJSON
import Foundation
import LogArchive
import Postgres

/// The SQL of erasure (docs/decisions/0040): the request, the device's rows, and each activity's
/// rows rewritten into their redacted form. Each transaction that changes a history names its
/// erasure (`liveline.erasure`), which the append-only guards let through.
enum ErasureQueries {
    struct Target {
        let activity: ActivityID
        let state: ActivityState
    }

    /// The activities `scope` erases, with their states: those of the projection, locked until
    /// the transaction ends, and those whose projection row a retirement removed (dismissed),
    /// whose rows other tables may still hold. An activity named alone is erased whether or not
    /// any of them holds it: archives may (nothing in the database says which activities they hold).
    static func targets(of scope: ErasureScope, in app: AppID, _ connection: Connection) throws -> [Target] {
        let rows =
            switch scope {
            case .activity(let activity):
                try connection.query(
                    """
                    SELECT activity_id, state FROM activities
                    WHERE app_id = \(app.rawValue) AND activity_id = \(activity.rawValue) FOR UPDATE
                    """
                )
            case .device(let device):
                try connection.query(
                    """
                    SELECT activity_id, state FROM activities
                    WHERE app_id = \(app.rawValue) AND device_id = \(device.rawValue) ORDER BY activity_id FOR UPDATE
                    """
                )
            }
        let live = try rows.map { row in
            guard let state = ActivityState(rawValue: try row.decode("state")) else {
                throw EventStoreError.unreadableRow("activities: a state")
            }
            return Target(activity: ActivityID(uncheckedRawValue: try row.decode("activity_id")), state: state)
        }
        let known = Set(live.map(\.activity.rawValue))
        let retired: [String] =
            switch scope {
            case .activity(let activity): [activity.rawValue]
            case .device(let device):
                try connection.query(
                    """
                    SELECT DISTINCT activity_id::text AS activity_id FROM retired_activities
                    WHERE app_id = \(app.rawValue) AND device_id = \(device.rawValue) ORDER BY 1
                    """
                ).map { try $0.decode("activity_id") }
            }
        return live
            + retired.filter { !known.contains($0) }.map {
                Target(activity: ActivityID(uncheckedRawValue: $0), state: .dismissed)
            }
    }

    /// The reference that stands for `device` in the archives, or a new one when it has none.
    static func reference(of device: DeviceID?, in app: AppID, _ connection: Connection) throws -> UUID {
        guard let device else { return UUID() }
        return try connection.query(
            "SELECT reference FROM device_references WHERE app_id = \(app.rawValue) AND device_id = \(device.rawValue)"
        ).single?.decode("reference") ?? UUID()
    }

    /// Destroys the keys the archived values of the erasure's scope were sealed under: an
    /// activity's leaf of the key tree is punctured (`ArchiveKeyQueries.puncture`: its rows copied
    /// later are not sealed either); a device's key is destroyed, its row kept without its id
    /// (a tombstone: `verify` tells its values erased), and the devices of its activities
    /// retired from the projection forgotten. A device that had no reference gets its
    /// tombstone all the same. Says whether a device's reference was there.
    static func destroyKeys(
        of scope: ErasureScope,
        in app: AppID,
        reference: UUID,
        _ connection: Connection
    ) throws
        -> Bool
    {
        switch scope {
        case .activity(let activity):
            try ArchiveKeyQueries.puncture(
                [ArchiveKeyTree.leaf(app: app.rawValue, activity: activity.rawValue)],
                connection
            )
            return false
        case .device(let device):
            try connection.execute(
                "DELETE FROM retired_activities WHERE app_id = \(app.rawValue) AND device_id = \(device.rawValue)"
            )
            let referenced = try connection.execute(
                """
                UPDATE device_references SET device_id = NULL, key = NULL, erased_at = now()
                WHERE app_id = \(app.rawValue) AND device_id = \(device.rawValue)
                """
            )
            if referenced == 0 {
                try connection.execute(
                    """
                    INSERT INTO device_references (reference, app_id, device_id, key, erased_at)
                    VALUES (\(reference), \(app.rawValue), NULL, NULL, now())
                    """
                )
            }
            return referenced > 0
        }
    }

    /// Records the erasure and its targets; its id.
    static func record(
        _ scope: ErasureScope,
        in app: AppID,
        reference: UUID,
        targets: [ActivityID],
        by requester: ErasureRequester,
        _ connection: Connection
    ) throws -> Int64 {
        let (kind, activity): (String, String?) =
            switch scope {
            case .activity(let activity): ("activity", activity.rawValue)
            case .device: ("device", nil)
            }
        let id: Int64 = try connection.query(
            """
            INSERT INTO erasures (app_id, scope, activity_id, reference, requested_by)
            VALUES (\(app.rawValue), \(kind), \(activity), \(reference), \(requester.rawValue))
            RETURNING id
            """
        ).single!.decode("id")
        try connection.execute(
            """
            INSERT INTO erasure_targets (erasure_id, app_id, activity_id)
            SELECT \(id), \(app.rawValue), unnest(\(PostgresArray(targets.map(\.rawValue)))::text[])
            """
        )
        return id
    }

    /// Removes the device's own rows — its push-to-start, widget and control tokens and their
    /// changes, its remote starts and open counts — and names it by the erasure's reference in
    /// its reload deliveries and the reload requests that listed it; whether it had any.
    static func eraseDevice(_ device: DeviceID, in app: AppID, erasure: Int64, _ connection: Connection) throws -> Bool
    {
        try name(erasure, connection)
        let (app, device) = (app.rawValue, device.rawValue)
        let erased = "erased:" + (try reference(of: erasure, connection)).uuidString.lowercased()
        var rows = 0
        rows += try connection.execute(
            "DELETE FROM push_to_start_token_changes WHERE app_id = \(app) AND device_id = \(device)"
        )
        rows += try connection.execute(
            "DELETE FROM reload_token_changes WHERE app_id = \(app) AND device_id = \(device)"
        )
        rows += try connection.execute("DELETE FROM reload_tokens WHERE app_id = \(app) AND device_id = \(device)")
        rows += try connection.execute("DELETE FROM remote_starts WHERE app_id = \(app) AND device_id = \(device)")
        rows += try connection.execute("DELETE FROM device_open_counts WHERE app_id = \(app) AND device_id = \(device)")
        rows += try connection.execute(
            """
            UPDATE reload_deliveries SET device_id = \(erased), device_token = NULL
            WHERE app_id = \(app) AND device_id = \(device)
            """
        )
        rows += try connection.execute(
            """
            UPDATE reload_requests SET device_ids = array_replace(device_ids, \(device)::text, \(erased)::text)
            WHERE app_id = \(app) AND \(device)::text = ANY (device_ids)
            """
        )
        return rows > 0
    }

    /// Erases up to `limit` activities of the oldest unfinished erasure, and finishes it when none
    /// is left; how many activities it erased, or 1 for an erasure it found finished.
    static func eraseNext(limit: Int, _ connection: Connection) throws -> Int {
        guard
            let erasure = try connection.query(
                """
                SELECT id, reference FROM erasures WHERE finished_at IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED
                """
            ).single
        else { return 0 }
        let id: Int64 = try erasure.decode("id")
        let reference: UUID = try erasure.decode("reference")
        try name(id, connection)
        let targets = try connection.query(
            """
            SELECT app_id, activity_id FROM erasure_targets
            WHERE erasure_id = \(id) AND erased_at IS NULL ORDER BY activity_id LIMIT \(literal: limit)
            """
        )
        guard let app: String = try targets.first?.decode("app_id") else {
            try connection.execute("UPDATE erasures SET finished_at = now() WHERE id = \(id)")
            return 1
        }
        let activities = PostgresArray(try targets.map { try $0.decode("activity_id", as: String.self) })
        let erased = "erased:" + reference.uuidString.lowercased()
        try connection.execute(
            """
            UPDATE events SET data = liveline_redacted_event_data(type, data, \(reference))
            WHERE app_id = \(app) AND activity_id = ANY (\(activities)::text[])
              AND data IS DISTINCT FROM liveline_redacted_event_data(type, data, \(reference))
            """
        )
        try connection.execute(
            """
            UPDATE activities SET attributes = liveline_masked(attributes), content_state = liveline_masked(content_state),
                push_token = CASE WHEN push_token IS NOT NULL THEN 'erased' END,
                device_id = CASE WHEN device_id IS NOT NULL THEN \(erased) END
            WHERE app_id = \(app) AND activity_id = ANY (\(activities)::text[])
            """
        )
        try connection.execute(
            """
            UPDATE deliveries d SET device_token = NULL
            FROM events e
            WHERE e.app_id = \(app) AND e.activity_id = ANY (\(activities)::text[])
              AND d.position = e.position AND d.recorded_at >= e.stream_recorded_at AND d.device_token IS NOT NULL
            """
        )
        try connection.execute(
            """
            UPDATE push_token_invalidations SET device_token = 'erased'
            WHERE app_id = \(app) AND activity_id = ANY (\(activities)::text[]) AND device_token <> 'erased'
            """
        )
        try connection.execute(
            """
            UPDATE rejections SET details = liveline_masked(details)
            WHERE app_id = \(app) AND activity_id = ANY (\(activities)::text[])
            """
        )
        try connection.execute(
            "DELETE FROM idempotency_keys WHERE app_id = \(app) AND activity_id = ANY (\(activities)::text[])"
        )
        try connection.execute(
            "DELETE FROM remote_starts WHERE app_id = \(app) AND activity_id = ANY (\(activities)::text[])"
        )
        try connection.execute(
            """
            UPDATE erasure_targets SET erased_at = now()
            WHERE erasure_id = \(id) AND activity_id = ANY (\(activities)::text[])
            """
        )
        return targets.count
    }

    /// Names the erasure the transaction works for: the append-only guards let its changes through.
    private static func name(_ erasure: Int64, _ connection: Connection) throws {
        try connection.execute("SELECT set_config('liveline.erasure', \(String(erasure)), true)")
    }

    private static func reference(of erasure: Int64, _ connection: Connection) throws -> UUID {
        try connection.query("SELECT reference FROM erasures WHERE id = \(erasure)").single!.decode("reference")
    }

    /// The activities of the live log an erasure redacted (those retired since are not counted).
    static func erasedStreamCount(_ connection: Connection) throws -> Int {
        Int(
            try connection.query(
                """
                SELECT count(*) AS streams FROM activities a
                WHERE EXISTS (SELECT FROM erasure_targets t
                              WHERE t.app_id = a.app_id AND t.activity_id = a.activity_id AND t.erased_at IS NOT NULL)
                """
            ).single!.decode("streams", as: Int64.self)
        )
    }

    static func erasure(_ id: Int64, in app: AppID?, _ connection: Connection) throws -> Erasure? {
        try connection.query(
            """
            SELECT * FROM erasure_progress
            WHERE id = \(id) AND (\(app?.rawValue)::text IS NULL OR app_id = \(app?.rawValue))
            """
        ).single.map(erasure)
    }

    static func erasures(of streams: [StreamID], _ connection: Connection) throws -> [StreamID: Erasure] {
        var found: [StreamID: Erasure] = [:]
        for row in try connection.query(
            """
            SELECT DISTINCT ON (w.app_id, w.activity_id) w.app_id AS stream_app, w.activity_id AS stream_activity, x.*
            FROM unnest(\(PostgresArray(streams.map(\.app.rawValue))), \(PostgresArray(streams.map(\.activity.rawValue))))
                AS w(app_id, activity_id)
            JOIN erasure_targets t ON t.app_id = w.app_id AND t.activity_id = w.activity_id AND t.erased_at IS NOT NULL
            JOIN erasure_progress x ON x.id = t.erasure_id
            ORDER BY w.app_id, w.activity_id, x.id DESC
            """
        ) {
            let stream = StreamID(
                app: AppID(uncheckedRawValue: try row.decode("stream_app")),
                activity: ActivityID(uncheckedRawValue: try row.decode("stream_activity"))
            )
            found[stream] = try erasure(row)
        }
        return found
    }

    /// The newest erasure of the device `reference` stands for, in `app`.
    static func erasure(ofDevice reference: UUID, in app: AppID, _ connection: Connection) throws -> Erasure? {
        try connection.query(
            """
            SELECT * FROM erasure_progress
            WHERE app_id = \(app.rawValue) AND scope = 'device' AND reference = \(reference)
            ORDER BY id DESC LIMIT 1
            """
        ).single.map(erasure)
    }

    private static func erasure(_ row: PostgresRow) throws -> Erasure {
        guard let requester = ErasureRequester(rawValue: try row.decode("requested_by")) else {
            throw EventStoreError.unreadableRow("erasures: requested_by")
        }
        return Erasure(
            id: try row.decode("id"),
            app: AppID(uncheckedRawValue: try row.decode("app_id")),
            activity: try row.decode("activity_id", as: String?.self).map(ActivityID.init(uncheckedRawValue:)),
            reference: try row.decode("reference"),
            requestedBy: requester,
            requestedAt: Timestamp(try row.decode("requested_at", as: PostgresTimestamp.self)),
            finishedAt: try row.decode("finished_at", as: PostgresTimestamp?.self).map(Timestamp.init),
            activities: Int(try row.decode("activities", as: Int64.self)),
            erased: Int(try row.decode("erased", as: Int64.self))
        )
    }
}

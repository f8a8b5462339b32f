public import ActivityLifecycle
import Crypto
public import LogArchive
import Postgres

/// The SQL that makes what a chunk of a partition needs before it is copied: the keys of its
/// activities, and the references of its devices.
enum ArchiveKeyQueries {
    /// Holds erasures off until the transaction ends (shared among copies): an erasure destroys
    /// the keys of its activities under the same lock, exclusive, so it never misses a key a
    /// copy is making, and a copy after it sees its targets (`EventStore.requestErasure`).
    static func holdErasures(_ connection: Connection) throws {
        try connection.execute("SELECT pg_advisory_xact_lock_shared(hashtextextended('liveline_erasure', 0))")
    }

    /// An erasure's side of `holdErasures`: waits for the copies under way, and holds new ones
    /// until the transaction ends.
    static func holdOffArchiving(_ connection: Connection) throws {
        try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended('liveline_erasure', 0))")
    }

    /// Makes a key for each activity of the rows at `rows` that has no live key and that no
    /// erasure reached since its rows were recorded, with its device's reference (made if
    /// needed; the device as the projection names it, or a reference of its own when unknown).
    /// Scalar subqueries: an index probe per activity, where joins could read whole tables.
    static func makeKeys(for rows: [String], of partition: String, _ connection: Connection) throws {
        let wanted = try connection.query(
            """
            SELECT s.app_id::text AS app, s.activity_id::text AS activity,
                (SELECT a.device_id::text FROM activities a
                 WHERE a.app_id = s.app_id AND a.activity_id = s.activity_id) AS device
            FROM (
                SELECT r.app_id, r.activity_id, min(r.recorded_at) AS recorded_at FROM \(identifier: partition) r
                WHERE r.ctid = ANY (\(PostgresArray(rows))::tid[])
                  AND r.activity_id ~ '^[A-Za-z0-9._:-]+$' AND length(r.activity_id) <= 128
                GROUP BY r.app_id, r.activity_id
            ) s
            WHERE \(fragment: needsKey)
            """
        ).map { row in
            (
                app: try row.decode("app", as: String.self), activity: try row.decode("activity", as: String.self),
                device: try row.decode("device", as: String?.self)
            )
        }
        try insertKeys(wanted, connection)
    }

    /// Whether the activity `s` (`app_id`, `activity_id`, and when its rows were first recorded,
    /// `recorded_at`) has no live key and no erasure reached it since: a key is to be made.
    static let needsKey: StaticString = """
        (SELECT k.id FROM archive_keys k
         WHERE k.app_id = s.app_id AND k.activity_id = s.activity_id AND k.key IS NOT NULL) IS NULL
        AND (SELECT t.erasure_id FROM erasure_targets t JOIN erasures e ON e.id = t.erasure_id
             WHERE t.app_id = s.app_id AND t.activity_id = s.activity_id AND e.requested_at >= s.recorded_at
             LIMIT 1) IS NULL
        """

    /// Makes keys for `wanted` activities, each with its device's reference (made when the
    /// device is known and has none; a reference of its own otherwise).
    static func insertKeys(
        _ wanted: [(app: String, activity: String, device: String?)],
        _ connection: Connection
    ) throws {
        guard !wanted.isEmpty else { return }
        let known = wanted.compactMap { row in row.device.map { (app: row.app, device: $0) } }
        try referenceDevices(apps: known.map(\.app), devices: known.map(\.device), connection)
        let keys = wanted.map { _ in SymmetricKey(size: .bits256).withUnsafeBytes { [UInt8]($0) } }
        try connection.execute(
            """
            INSERT INTO archive_keys (app_id, activity_id, device_reference, key)
            SELECT w.app_id, w.activity_id,
                coalesce((SELECT d.reference FROM device_references d
                          WHERE d.app_id = w.app_id AND d.device_id = w.device_id), gen_random_uuid()),
                w.key
            FROM unnest(\(PostgresArray(wanted.map(\.app))), \(PostgresArray(wanted.map(\.activity))),
                        \(PostgresArray(wanted.map(\.device))), \(PostgresArray(keys)))
                AS w(app_id, activity_id, device_id, key)
            ON CONFLICT DO NOTHING
            """
        )
    }

    /// Makes a reference for each device of the rows at `rows` of a partition of
    /// `reload_deliveries` that has none (one an erasure renamed is left as it is).
    static func referenceDevices(for rows: [String], of partition: String, _ connection: Connection) throws {
        try connection.execute(
            """
            INSERT INTO device_references (app_id, device_id)
            SELECT DISTINCT r.app_id, r.device_id FROM \(identifier: partition) r
            WHERE r.ctid = ANY (\(PostgresArray(rows))::tid[]) AND r.device_id NOT LIKE 'erased:%'
            ON CONFLICT DO NOTHING
            """
        )
    }

    private static func referenceDevices(apps: [String], devices: [String], _ connection: Connection) throws {
        try connection.execute(
            """
            INSERT INTO device_references (app_id, device_id)
            SELECT DISTINCT app_id, device_id FROM unnest(\(PostgresArray(apps)), \(PostgresArray(devices)))
                AS w(app_id, device_id)
            WHERE device_id NOT LIKE 'erased:%'
            ON CONFLICT DO NOTHING
            """
        )
    }
}

extension ArchiveKeyQueries {
    /// The keys archives were sealed under — every one, or those of one activity — with the
    /// activities an erasure reached.
    static func keyRing(of stream: StreamID?, _ connection: Connection) throws -> ArchiveKeyRing {
        var keys: [Int64: [UInt8]?] = [:]
        var erased: Set<[String]> = []
        let rows =
            if let stream {
                try connection.query(
                    """
                    SELECT id, key, app_id::text AS app, activity_id::text AS activity FROM archive_keys
                    WHERE app_id = \(stream.app.rawValue) AND activity_id = \(stream.activity.rawValue)
                    """
                )
            } else {
                try connection.query(
                    "SELECT id, key, app_id::text AS app, activity_id::text AS activity FROM archive_keys"
                )
            }
        for row in rows {
            let key: [UInt8]? = try row.decode("key")
            keys[try row.decode("id")] = key
            if key == nil { erased.insert([try row.decode("app"), try row.decode("activity")]) }
        }
        return ArchiveKeyRing(keys, erasedActivities: erased)
    }
}

extension EventStore {
    /// The keys archives were sealed under, for `liveline verify --archive`: every one.
    public func archiveKeys() async throws -> ArchiveKeyRing {
        try await withTransaction { try ArchiveKeyQueries.keyRing(of: nil, $0) }
    }

    /// The keys `stream`'s archived rows were sealed under, for its audit.
    public func archiveKeys(of stream: StreamID) async throws -> ArchiveKeyRing {
        try await withTransaction { try ArchiveKeyQueries.keyRing(of: stream, $0) }
    }
}

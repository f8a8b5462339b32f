import Postgres

/// An activity whose rows an archive written before sealing holds: when its first row there was
/// recorded, and its device when the archive names it.
struct ArchivedActivity: Hashable {
    let app: String
    let activity: String
    let recordedAt: String
    let device: String?
}

/// How the rows of one archived activity are sealed: its live key (none once an erasure reached
/// it) and the reference that stands for its device (none: its rows are no one's, written as
/// they are).
struct ActivitySealing {
    let keyID: Int64?
    let keyHex: String?
    let reference: String?
}

/// The SQL of sealing archives written before sealing existed (`EventStore.sealOlderArchives`):
/// the archives the database recorded unsealed, the keys of the activities they hold, the
/// references of their devices, and each new manifest recorded.
enum OlderArchiveQueries {
    /// The partitions whose recorded archive was written before sealing (`liveline-archive/1`)
    /// in a table with personal values, each with its manifest's text.
    static func unsealed(_ connection: Connection) throws -> [(partition: String, manifest: String)] {
        try connection.query(
            """
            SELECT table_name, archive::text AS manifest FROM log_partitions
            WHERE archive ->> 'format' = 'liveline-archive/1' AND (archive ->> 'rows')::bigint > 0
              AND parent IN ('events', 'push_token_invalidations', 'rejections', 'deliveries', 'reload_deliveries')
            ORDER BY to_time, parent
            """
        ).map { (try $0.decode("table_name"), try $0.decode("manifest")) }
    }

    static func record(
        _ manifest: String,
        of partition: String,
        replacing old: String,
        _ connection: Connection
    )
        throws
    {
        try connection.execute(
            """
            UPDATE log_partitions SET archive = \(JSONB(manifest))
            WHERE table_name = \(partition) AND archive = \(JSONB(old))
            """
        )
    }

    /// Makes keys for `activities` that have none and that no erasure reached since their rows
    /// were recorded, then returns how each one's rows are sealed.
    static func sealing(
        of activities: [ArchivedActivity],
        _ connection: Connection
    ) throws -> [[String]: ActivitySealing] {
        let valid = activities.filter { $0.activity.wholeMatch(of: /[A-Za-z0-9._:-]{1,128}/) != nil }
        let (apps, ids, times) = (
            PostgresArray(valid.map(\.app)), PostgresArray(valid.map(\.activity)),
            PostgresArray(valid.map(\.recordedAt))
        )
        let wanted = try connection.query(
            """
            SELECT s.app_id AS app, s.activity_id AS activity, s.device_id AS device
            FROM unnest(\(apps), \(ids), \(times)::timestamptz[], \(PostgresArray(valid.map(\.device))))
                AS s(app_id, activity_id, recorded_at, device_id)
            WHERE \(fragment: ArchiveKeyQueries.needsKey)
            """
        ).map { row in
            (
                app: try row.decode("app", as: String.self), activity: try row.decode("activity", as: String.self),
                device: try row.decode("device", as: String?.self)
            )
        }
        try ArchiveKeyQueries.insertKeys(wanted, connection)
        var sealing: [[String]: ActivitySealing] = [:]
        for row in try connection.query(
            """
            SELECT r.app_id AS app, r.activity_id AS activity, k.id, encode(k.key, 'hex') AS key,
                coalesce(k.device_reference, x.reference)::text AS reference
            FROM unnest(\(apps), \(ids), \(times)::timestamptz[]) AS r(app_id, activity_id, recorded_at)
            \(fragment: ArchiveRedaction.keyJoins)
            """
        ) {
            sealing[[try row.decode("app"), try row.decode("activity")]] = ActivitySealing(
                keyID: try row.decode("id"),
                keyHex: try row.decode("key"),
                reference: try row.decode("reference")
            )
        }
        return sealing
    }

    /// The reference of each of `devices` (`[app, device]`), made for those that have none.
    static func references(of devices: Set<[String]>, _ connection: Connection) throws -> [[String]: String] {
        let (apps, ids) = (PostgresArray(devices.map { $0[0] }), PostgresArray(devices.map { $0[1] }))
        try connection.execute(
            """
            INSERT INTO device_references (app_id, device_id)
            SELECT app_id, device_id FROM unnest(\(apps), \(ids)) AS w(app_id, device_id)
            ON CONFLICT DO NOTHING
            """
        )
        var references: [[String]: String] = [:]
        for row in try connection.query(
            """
            SELECT w.app_id AS app, w.device_id AS device, d.reference::text AS reference
            FROM unnest(\(apps), \(ids)) AS w(app_id, device_id)
            JOIN LATERAL (
                SELECT d.reference FROM device_references d WHERE d.app_id = w.app_id AND d.device_id = w.device_id
            ) d ON true
            """
        ) {
            references[[try row.decode("app"), try row.decode("device")]] = try row.decode("reference")
        }
        return references
    }
}

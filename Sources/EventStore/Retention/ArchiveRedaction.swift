public import ActivityLifecycle
import CanonicalJSON
import Crypto
public import LogArchive
import Postgres

/// How a table's rows are written into its archives (docs/decisions/0040): the personal columns
/// in the form an erasure leaves them, and, for the tables whose rows belong to an activity, the
/// originals sealed under the activity's key (`archive_keys`) in a column of their own. An
/// erasure destroys the keys; the archives do not change.
///
/// Its SQL reads the partition's row as `r`, the row's activity's live key as `k`, the newest
/// erasure of that activity since the row was recorded as `x` (a row an erasure reached is
/// written redacted and never sealed), and `z` as the columns the copy redacts itself. Each row
/// looks up its own (`LATERAL … LIMIT 1`, an index probe): a join over every key would read them
/// all for each chunk. The
/// sealed tables' rows are redacted as they are sealed (`ArchiveSealer`), by `Redaction`'s rules:
/// the database's functions, called row by row, cost several times the copy.
struct ArchiveRedaction {
    /// A table whose rows are sealed: its personal column, redacted and sealed as it is copied;
    /// a row is known by its `rowKey`.
    struct Sealing {
        let rowKey: String
        let column: String
        let redact: ArchiveSealer.Redact
    }

    /// The columns written from `z`.
    let personal: Set<String>
    /// The statement, over `r`, that selects the columns the copy redacts (`z`).
    let redacted: StaticString
    /// The joins that find `k` and `x`, or a device's reference.
    let joins: StaticString
    /// The working columns (`ArchiveSealer.workingColumns`), or none.
    let working: StaticString
    let sealing: Sealing?
    /// What a chunk's copy makes first.
    let preparation: Preparation

    enum Preparation {
        case nothing
        /// The keys of the rows' activities that have none: the rows are sealed under them.
        case keys
        /// The references of the rows' devices that have none.
        case deviceReferences
    }

    /// The table's redaction (none for a table that holds nothing personal: `event_traces`).
    static func of(_ table: String) -> ArchiveRedaction {
        switch table {
        case "events":
            sealed(
                Sealing(rowKey: "position", column: "data") { value, reference, column in
                    guard case .object(let data) = try JSONParser.parse(Array(value.utf8)) else {
                        throw ArchivedColumns.Unreadable(description: "an event's data is not an object")
                    }
                    let redacted = Redaction.eventData(data, type: column("type") ?? "", reference: reference)
                    return redacted == data
                        ? nil : String(decoding: JSONValue.object(redacted).canonicalJSON, as: UTF8.self)
                }
            )
        case "push_token_invalidations":
            sealed(
                Sealing(rowKey: "id", column: "device_token") { value, _, _ in value == "erased" ? nil : "erased" }
            )
        case "rejections":
            // A refusal that names no activity (or not a valid id) belongs to no one's stream,
            // and no erasure reaches it: it has no reference, and is written as it is.
            sealed(
                Sealing(rowKey: "id", column: "details") { value, _, _ in
                    let details = try JSONParser.parse(Array(value.utf8))
                    let masked = Redaction.hidingValues(details)
                    return masked == details ? nil : String(decoding: masked.canonicalJSON, as: UTF8.self)
                }
            )
        case "deliveries":
            // A push's token is its registration's (`token_position`) or, for a start, the one
            // its request names: readers find it in the stream's events.
            ArchiveRedaction(
                personal: ["device_token"],
                redacted: "SELECT NULL::text AS device_token",
                joins: "",
                working: "",
                sealing: nil,
                preparation: .nothing
            )
        case "reload_deliveries":
            // Reloads are a device's: its id is written as its reference, its token not at all.
            ArchiveRedaction(
                personal: ["device_id", "device_token"],
                redacted: """
                    SELECT CASE WHEN r.device_id LIKE 'erased:%' THEN r.device_id::text
                        ELSE 'erased:' || coalesce(d.reference, gen_random_uuid()) END AS device_id,
                        NULL::text AS device_token
                    """,
                joins: """
                    LEFT JOIN LATERAL (
                        SELECT d.reference FROM device_references d WHERE d.app_id = r.app_id AND d.device_id = r.device_id
                    ) d ON true
                    """,
                working: "",
                sealing: nil,
                preparation: .deviceReferences
            )
        default:
            ArchiveRedaction(
                personal: [],
                redacted: "SELECT",
                joins: "",
                working: "",
                sealing: nil,
                preparation: .nothing
            )
        }
    }

    /// A table whose rows belong to an activity, sealed under its key.
    private static func sealed(_ sealing: Sealing) -> ArchiveRedaction {
        ArchiveRedaction(
            personal: [],
            redacted: "SELECT",
            joins: """
                LEFT JOIN LATERAL (
                    SELECT e.reference FROM erasure_targets t JOIN erasures e ON e.id = t.erasure_id
                    WHERE t.app_id = r.app_id AND t.activity_id = r.activity_id AND e.requested_at >= r.recorded_at
                    ORDER BY e.id DESC LIMIT 1
                ) x ON true
                LEFT JOIN LATERAL (
                    SELECT k.id, k.key, k.device_reference FROM archive_keys k
                    WHERE k.app_id = r.app_id AND k.activity_id = r.activity_id AND k.key IS NOT NULL
                      AND x.reference IS NULL
                    LIMIT 1
                ) k ON true
                """,
            working: """
                , k.id AS seal_key_id, encode(k.key, 'hex') AS seal_key,
                coalesce(k.device_reference, x.reference)::text AS seal_reference
                """,
            sealing: sealing,
            preparation: .keys
        )
    }

    /// The columns selected for `columns` of the table, in its order.
    func selected(_ columns: [String]) -> [(of: StaticString, name: String)] {
        columns.map { personal.contains($0) ? ("z", $0) : ("r", $0) }
    }
}

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
            WHERE (SELECT k.id FROM archive_keys k
                   WHERE k.app_id = s.app_id AND k.activity_id = s.activity_id AND k.key IS NOT NULL) IS NULL
              AND (SELECT t.erasure_id FROM erasure_targets t JOIN erasures e ON e.id = t.erasure_id
                   WHERE t.app_id = s.app_id AND t.activity_id = s.activity_id AND e.requested_at >= s.recorded_at
                   LIMIT 1) IS NULL
            """
        ).map { row in
            (
                app: try row.decode("app", as: String.self), activity: try row.decode("activity", as: String.self),
                device: try row.decode("device", as: String?.self)
            )
        }
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

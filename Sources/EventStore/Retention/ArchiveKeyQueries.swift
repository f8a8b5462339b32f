public import ActivityLifecycle
import Crypto
public import Foundation
public import LogArchive
import Postgres

/// An activity whose rows are about to be archived: when its first of them was recorded, and its
/// device when the rows name it (otherwise the projection's, or the one it had when its
/// projection row was removed).
struct ArchivedActivity: Hashable {
    let app: String
    let activity: String
    let recordedAt: String
    let device: String?
}

/// The SQL of the keys archives are sealed under (docs/decisions/0040): the key tree's nodes,
/// the devices' references and keys, and how each activity's rows are sealed.
enum ArchiveKeyQueries {
    /// Holds erasures off until the transaction ends (shared among copies): an erasure punctures
    /// the tree and destroys devices' keys under the same lock, exclusive, so it never meets a
    /// copy half-way, and a copy after it finds its work done (`EventStore.requestErasure`).
    static func holdErasures(_ connection: Connection) throws {
        try connection.execute("SELECT pg_advisory_xact_lock_shared(hashtextextended('liveline_erasure', 0))")
    }

    /// An erasure's side of `holdErasures`: waits for the copies under way, and holds new ones
    /// until the transaction ends.
    static func holdOffArchiving(_ connection: Connection) throws {
        try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended('liveline_erasure', 0))")
    }

    /// The activities of the partition's rows at `rows`, each with when its first row there was
    /// recorded.
    static func activities(
        of rows: [String],
        in partition: String,
        _ connection: Connection
    ) throws
        -> [ArchivedActivity]
    {
        try connection.query(
            """
            SELECT r.app_id::text AS app, r.activity_id::text AS activity, min(r.recorded_at)::text AS recorded_at
            FROM \(identifier: partition) r
            WHERE r.ctid = ANY (\(PostgresArray(rows))::tid[])
            GROUP BY r.app_id, r.activity_id
            """
        ).map {
            ArchivedActivity(
                app: try $0.decode("app"),
                activity: try $0.decode("activity"),
                recordedAt: try $0.decode("recorded_at"),
                device: nil
            )
        }
    }

    /// How the rows of each of `activities` with a valid id are sealed (a refusal may name an
    /// invalid one: it is no one's, and written as it is): under the key of its leaf of the tree
    /// (the root made when there is none yet) and its device's key (its reference made when it has
    /// none), or, once an erasure reached it — since its rows were recorded, its leaf punctured,
    /// or its device's key destroyed —, not at all.
    static func sealings(
        of activities: [ArchivedActivity],
        _ connection: Connection
    ) throws -> [ArchiveSealer.Activity: ArchiveSealer.Sealing] {
        let activities = activities.filter { ActivityID(rawValue: $0.activity) != nil }
        guard !activities.isEmpty else { return [:] }
        let (apps, ids, times, devices) = (
            PostgresArray(activities.map(\.app)), PostgresArray(activities.map(\.activity)),
            PostgresArray(activities.map(\.recordedAt)), PostgresArray(activities.map(\.device))
        )
        try connection.execute(
            """
            INSERT INTO device_references (app_id, device_id)
            SELECT DISTINCT s.app_id, d.device_id
            FROM unnest(\(apps), \(ids), \(devices)) AS s(app_id, activity_id, device_id),
                LATERAL (\(fragment: deviceOf)) d
            WHERE d.device_id NOT LIKE 'erased:%'
            ON CONFLICT DO NOTHING
            """
        )
        let leaves = activities.map { ArchiveKeyTree.leaf(app: $0.app, activity: $0.activity) }
        let nodes = try coveringNodes(of: leaves, connection)
        var sealings: [ArchiveSealer.Activity: ArchiveSealer.Sealing] = [:]
        for row in try connection.query(
            """
            SELECT s.app_id AS app, s.activity_id AS activity, s.ordinal, w.device_id AS device,
                coalesce(x.reference, r.reference)::text AS reference, r.key, x.reference IS NOT NULL AS erased
            FROM unnest(\(apps), \(ids), \(times)::timestamptz[], \(devices))
                WITH ORDINALITY AS s(app_id, activity_id, recorded_at, device_id, ordinal)
            CROSS JOIN LATERAL (\(fragment: deviceOf)) w
            LEFT JOIN device_references r ON r.app_id = s.app_id AND r.device_id = w.device_id
            LEFT JOIN LATERAL (
                SELECT e.reference FROM erasure_targets t JOIN erasures e ON e.id = t.erasure_id
                WHERE t.app_id = s.app_id AND t.activity_id = s.activity_id AND e.requested_at >= s.recorded_at
                ORDER BY e.id DESC LIMIT 1
            ) x ON true
            """
        ) {
            let index = Int(try row.decode("ordinal", as: Int64.self)) - 1
            let reference: String? = try row.decode("reference")
            let device: String? = try row.decode("device")
            let deviceKey: [UInt8]? = try row.decode("key")
            // Sealed unless erased: since its rows were recorded, at its leaf, or with its device
            // (whose id an erasure renamed, so that it has no key).
            var key: (name: SealedRun.KeyName, key: SymmetricKey)?
            if try !row.decode("erased", as: Bool.self), let node = nodes[index], (device == nil) == (deviceKey == nil)
            {
                let leaf = leaves[index]
                key = (
                    SealedRun.KeyName(
                        leaf: leaf,
                        device: deviceKey == nil ? nil : reference.flatMap(UUID.init(uuidString:))
                    ),
                    ArchiveKeyTree.sealingKey(leaf: ArchiveKeyTree.key(of: leaf, from: node), device: deviceKey)
                )
            }
            sealings[[try row.decode("app"), try row.decode("activity")]] = ArchiveSealer.Sealing(
                reference: reference ?? "",
                key: key
            )
        }
        return sealings
    }

    /// The device of the activity `s` (`app_id`, `activity_id`, and `device_id` when its rows
    /// name it) as `device_id`: the rows', else the projection's, else the one it had when its
    /// projection row was removed.
    private static let deviceOf: StaticString = """
        SELECT coalesce(
            s.device_id,
            (SELECT a.device_id FROM activities a WHERE a.app_id = s.app_id AND a.activity_id = s.activity_id),
            (SELECT m.device_id FROM retired_activities m WHERE m.app_id = s.app_id AND m.activity_id = s.activity_id
             ORDER BY m.retired_at DESC LIMIT 1)
        )::text AS device_id
        """

    /// The node of the tree that covers each of `leaves`, `nil` for a punctured leaf; the tree's
    /// root is made first when the database has none.
    private static func coveringNodes(of leaves: [UInt64], _ connection: Connection) throws -> [ArchiveKeyTree.Node?] {
        let root = ArchiveKeyTree.newRoot()
        try connection.execute(
            """
            INSERT INTO archive_key_nodes (start, level, key)
            SELECT 0, 0, \(root.key) WHERE NOT EXISTS (SELECT FROM archive_key_nodes)
            ON CONFLICT DO NOTHING
            """
        )
        let found = try nearestNodes(of: leaves, connection)
        return leaves.map { leaf in found.first { $0.covers(leaf) } }
    }

    /// For each of `leaves`, the node with the greatest start not after it and the one after it:
    /// the covering node when there is one, and, whatever the leaf, a node when the tree exists.
    static func nearestNodes(of leaves: [UInt64], _ connection: Connection) throws -> [ArchiveKeyTree.Node] {
        try connection.query(
            """
            SELECT DISTINCT n.start, n.level, n.key FROM unnest(\(PostgresArray(leaves.map { Int64($0) }))::bigint[]) l(leaf),
                LATERAL (
                    (SELECT start, level, key FROM archive_key_nodes WHERE start <= l.leaf ORDER BY start DESC LIMIT 1)
                    UNION ALL
                    (SELECT start, level, key FROM archive_key_nodes WHERE start > l.leaf ORDER BY start LIMIT 1)
                ) n
            """
        ).map(node)
    }

    /// Punctures the tree at each of `leaves` (made first when the database has none, so that
    /// no copy after makes one that derives them): the node that covers the leaf is replaced by the
    /// nodes beside its path. A leaf punctured before is left as it is.
    static func puncture(_ leaves: [UInt64], _ connection: Connection) throws {
        _ = try coveringNodes(of: [], connection)
        for leaf in leaves {
            guard let node = try nearestNodes(of: [leaf], connection).first(where: { $0.covers(leaf) }) else {
                continue
            }
            let replacement = ArchiveKeyTree.puncture(leaf, in: node)
            try connection.execute("DELETE FROM archive_key_nodes WHERE start = \(Int64(node.start))")
            try connection.execute(
                """
                INSERT INTO archive_key_nodes (start, level, key)
                SELECT * FROM unnest(
                    \(PostgresArray(replacement.map { Int64($0.start) }))::bigint[],
                    \(PostgresArray(replacement.map { Int32($0.level) }))::smallint[],
                    \(PostgresArray(replacement.map(\.key)))::bytea[])
                """
            )
        }
    }

    static func node(_ row: PostgresRow) throws -> ArchiveKeyTree.Node {
        let node = ArchiveKeyTree.Node(
            start: UInt64(try row.decode("start", as: Int64.self)),
            level: Int(try row.decode("level", as: Int64.self)),
            key: try row.decode("key")
        )
        guard node.isWellFormed else { throw EventStoreError.unreadableRow("archive_key_nodes: a node") }
        return node
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
            JOIN device_references d ON d.app_id = w.app_id AND d.device_id = w.device_id
            """
        ) {
            references[[try row.decode("app"), try row.decode("device")]] = try row.decode("reference")
        }
        return references
    }
}

extension ArchiveKeyQueries {
    /// The keys archives are sealed under: the whole tree and every device's key, or, for one
    /// activity, the nodes near its leaf and the keys of `devices`.
    static func keyRing(of stream: StreamID?, devices: Set<UUID>, _ connection: Connection) throws -> ArchiveKeyRing {
        var keys: [UUID: [UInt8]?] = [:]
        guard let stream else {
            let nodes = try connection.query("SELECT start, level, key FROM archive_key_nodes").map(node)
            for row in try connection.query("SELECT reference, key FROM device_references") {
                keys[try row.decode("reference")] = .some(try row.decode("key"))
            }
            return ArchiveKeyRing(nodes: nodes, devices: keys)
        }
        let leaf = ArchiveKeyTree.leaf(app: stream.app.rawValue, activity: stream.activity.rawValue)
        for row in try connection.query(
            "SELECT reference, key FROM device_references WHERE reference = ANY (\(PostgresArray(devices.map(\.uuidString)))::uuid[])"
        ) {
            keys[try row.decode("reference")] = .some(try row.decode("key"))
        }
        return ArchiveKeyRing(nodes: try nearestNodes(of: [leaf], connection), leaves: [leaf], devices: keys)
    }
}

extension EventStore {
    /// The keys archives are sealed under, for `liveline verify --archive`: the whole tree and
    /// every device's.
    public func archiveKeys() async throws -> ArchiveKeyRing {
        try await withTransaction { try ArchiveKeyQueries.keyRing(of: nil, devices: [], $0) }
    }

    /// The keys `stream`'s archived rows were sealed under, for its audit: its leaf's, and those
    /// of `devices`, the references its rows name.
    public func archiveKeys(of stream: StreamID, devices: Set<UUID>) async throws -> ArchiveKeyRing {
        try await withTransaction { try ArchiveKeyQueries.keyRing(of: stream, devices: devices, $0) }
    }
}

import ActivityLifecycle
import CanonicalJSON
import Postgres

/// The tables of shards held under leases: the log's, and the reloads'.
enum ShardTable: String {
    case delivery = "delivery_shards"
    case reload = "reload_shards"

    /// The heartbeats of the workers that share these shards.
    var workers: String {
        switch self {
        case .delivery: "delivery_workers"
        case .reload: "reload_workers"
        }
    }
}

/// The shards' leases and the workers' heartbeats.
extension DeliveryQueries {
    /// Says `worker` is alive among the workers of `table`'s shards; returns how many are (a
    /// heartbeat in the last `window`).
    static func heartbeat(
        _ worker: String,
        window: Duration,
        of table: ShardTable = .delivery,
        _ connection: Connection
    ) throws -> Int {
        try connection.execute(
            """
            INSERT INTO \(identifier: table.workers) (worker_id, heartbeat_at) VALUES (\(worker), now())
            ON CONFLICT (worker_id) DO UPDATE SET heartbeat_at = now()
            """
        )
        let windowSeconds = Double(window.microseconds) / 1e6
        try connection.execute(
            """
            DELETE FROM \(identifier: table.workers)
            WHERE heartbeat_at < now() - make_interval(secs => \(windowSeconds * 10))
            """
        )
        return try connection.query(
            """
            SELECT count(*)::bigint FROM \(identifier: table.workers)
            WHERE heartbeat_at >= now() - make_interval(secs => \(windowSeconds))
            """
        ).single.map { Int(try $0.decode(0, as: Int64.self)) } ?? 1
    }

    /// Forgets `worker`'s heartbeat: it stopped, and the fair share counts the others only.
    static func leave(_ worker: String, of table: ShardTable = .delivery, _ connection: Connection) throws {
        try connection.execute("DELETE FROM \(identifier: table.workers) WHERE worker_id = \(worker)")
    }

    /// Renews `worker`'s leases on the shards of `table` (`delivery_shards` or `reload_shards`);
    /// returns the shards it still holds. Its rows are locked in shard order, as every statement
    /// that locks several shards locks them (`moveCursors`): two that took them in different
    /// orders could each wait for a row the other holds, and PostgreSQL would end one as a
    /// deadlock. (`claim` skips the rows it finds locked.)
    static func renew(
        _ worker: String,
        lease: Duration,
        of table: ShardTable = .delivery,
        _ connection: Connection
    ) throws -> Set<Int> {
        let seconds = Double(lease.microseconds) / 1e6
        return Set(
            try connection.query(
                """
                UPDATE \(identifier: table.rawValue) s
                SET lease_expires_at = now() + make_interval(secs => \(seconds))
                FROM (SELECT shard FROM \(identifier: table.rawValue) WHERE owner = \(worker) AND lease_expires_at > now()
                      ORDER BY shard FOR UPDATE) AS held
                WHERE s.shard = held.shard AND s.owner = \(worker) RETURNING s.shard
                """
            ).map { try $0.decode(0, as: Int.self) }
        )
    }

    /// Claims up to `count` free shards of `table` (never held, released, or whose lease ran
    /// out).
    static func claim(
        _ count: Int,
        for worker: String,
        lease: Duration,
        of table: ShardTable,
        _ connection: Connection
    ) throws -> Set<Int> {
        let seconds = Double(lease.microseconds) / 1e6
        return Set(
            try connection.query(
                """
                UPDATE \(identifier: table.rawValue)
                SET owner = \(worker), lease_expires_at = now() + make_interval(secs => \(seconds))
                WHERE shard IN (
                    SELECT shard FROM \(identifier: table.rawValue)
                    WHERE owner IS NULL OR lease_expires_at IS NULL OR lease_expires_at <= now()
                    ORDER BY shard LIMIT \(count) FOR UPDATE SKIP LOCKED)
                RETURNING shard
                """
            ).map { try $0.decode("shard", as: Int.self) }
        )
    }

    /// Claims up to `count` free shards of the log; returns each with its cursor.
    static func claim(
        _ count: Int,
        for worker: String,
        lease: Duration,
        _ connection: Connection
    ) throws -> [Int: Int64] {
        let shards = try claim(count, for: worker, lease: lease, of: .delivery, connection)
        guard !shards.isEmpty else { return [:] }
        var claimed: [Int: Int64] = [:]
        for row in try connection.query(
            "SELECT shard, position FROM delivery_shards WHERE shard = ANY (\(PostgresArray(shards.sorted())))"
        ) {
            claimed[try row.decode("shard", as: Int.self)] = try row.decode("position", as: Int64.self)
        }
        return claimed
    }

    /// Moves the cursors of the shards `worker` holds among `cursors` (never back), and gives
    /// them up when `releasing`. The rows are locked in shard order (see `renew`).
    static func moveCursors(
        _ cursors: [Int: Int64],
        of worker: String,
        releasing: Bool,
        _ connection: Connection
    ) throws {
        let shards = cursors.keys.sorted()
        try connection.execute(
            """
            UPDATE delivery_shards s SET position = greatest(s.position, held.position),
                owner = CASE WHEN \(releasing) THEN NULL ELSE s.owner END,
                lease_expires_at = CASE WHEN \(releasing) THEN NULL ELSE s.lease_expires_at END
            FROM (SELECT d.shard, c.position
                  FROM unnest(\(PostgresArray(shards)), \(PostgresArray(shards.map { cursors[$0]! }))) AS c(shard, position)
                  JOIN delivery_shards d ON d.shard = c.shard AND d.owner = \(worker)
                  ORDER BY d.shard FOR UPDATE OF d) AS held
            WHERE s.shard = held.shard AND s.owner = \(worker)
            """
        )
    }
}

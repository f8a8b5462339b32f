import Postgres
import Synchronization
import Testing

/// Helpers for tests that make the store wait on purpose: transactions that hold locks until
/// they are terminated, and ways to see who waits.
enum DatabaseWaits {
    /// The backend that waits for a lock: the writer's, in its batch's append (nothing else in
    /// the test's database waits for one).
    static func writerWaitingForALock(_ admin: ConnectionPool) async throws -> Int32 {
        var pid: Int32?
        try await waitUntil("a writer waits for a lock") {
            pid = try await admin.withConnection { connection in
                try connection.query(
                    """
                    SELECT pid FROM pg_stat_activity
                    WHERE datname = current_database() AND wait_event_type = 'Lock'
                    """
                ).single?.decode(0)
            }
            return pid != nil
        }
        return pid!
    }

    /// Runs each statement of `holds` in a transaction of its own on `admin`, which then sleeps,
    /// holding what the statement locked or wrote, until its backend is terminated. Returns, once
    /// all have run, each one's backend by name, and the task that ends when all have ended.
    static func hold(
        _ holds: [(name: String, statement: @Sendable (Connection) throws -> Void)],
        on admin: ConnectionPool
    ) async -> (pids: [String: Int32], ended: Task<Void, Never>) {
        let (started, start) = AsyncStream<(String, Int32)>.makeStream()
        let ended = Task {
            await withTaskGroup(of: Void.self) { group in
                for (name, statement) in holds {
                    group.addTask {
                        try? await admin.withTransaction { connection in
                            try statement(connection)
                            start.yield((name, try connection.query("SELECT pg_backend_pid()").single!.decode(0)))
                            try connection.execute("SELECT pg_sleep(60)")
                        }
                    }
                }
            }
        }
        var pids: [String: Int32] = [:]
        for await (name, pid) in started {
            pids[name] = pid
            if pids.count == holds.count { break }
        }
        return (pids, ended)
    }

    /// How many of the database's backends wait for a lock.
    static func lockWaiters(_ admin: ConnectionPool) async throws -> Int {
        try await admin.withConnection { connection in
            try connection.query(
                """
                SELECT count(*) FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock'
                """
            ).single!.decode(0)
        }
    }

    static func terminate(_ pid: Int32, _ admin: ConnectionPool) async throws {
        try await admin.withConnection { try $0.execute("SELECT pg_terminate_backend(\(pid))") }
    }

    static func waitUntil(
        _ what: Comment,
        _ condition: () async throws -> Bool
    ) async throws {
        let giveUp = ContinuousClock.now + .seconds(60)
        while try await !condition() {
            try #require(ContinuousClock.now < giveUp, "waited 60 s until \(what)")
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// A flag one task sets and another reads.
final class Flag: Sendable {
    private let value = Mutex(false)

    var isSet: Bool { value.withLock { $0 } }

    func set() { value.withLock { $0 = true } }
}

import Postgres
import TestSupport
import Testing

@Suite("LISTEN/NOTIFY")
struct NotificationListenerTests {
    let database: String

    init() async throws {
        database = try await TestDatabase.makeEmpty()
    }

    /// Runs a listener on `channels` while `body` runs, then stops it.
    private func whileListening(
        to channels: [String],
        _ body: (NotificationListener) async throws -> Void
    ) async throws {
        let listener = try NotificationListener(
            connectionString: database,
            channels: channels,
            logger: TestDatabase.logger
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await listener.run() }
            while !listener.isListening { try await Task.sleep(for: .milliseconds(10)) }
            try await body(listener)
            group.cancelAll()
        }
    }

    private func notify(_ channel: String) async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            try await pool.withConnection { try $0.execute("SELECT pg_notify(\(channel), 'hello')") }
        }
    }

    @Test("a notification on the channel wakes a waiter; other channels do not")
    func wakes() async throws {
        try await whileListening(to: ["one", "two"]) { listener in
            let before = listener.generation(of: "one")
            async let woken = listener.wait(on: "one", after: before, timeout: .seconds(60))
            try await Task.sleep(for: .milliseconds(50))
            try await notify("two")
            try await notify("one")
            #expect(await woken > before)
            #expect(listener.generation(of: "two") > 0)
        }
    }

    @Test("a waiter already behind the generation returns at once; a quiet channel times out")
    func generations() async throws {
        try await whileListening(to: ["quiet"]) { listener in
            let current = listener.generation(of: "quiet")
            #expect(await listener.wait(on: "quiet", after: current - 1, timeout: .seconds(60)) == current)
            #expect(await listener.wait(on: "quiet", after: current, timeout: .milliseconds(100)) == current)
        }
    }

    @Test("a waiter whose task is cancelled before it waits returns without waiting for a notification")
    func cancelledBeforeWaiting() async throws {
        try await whileListening(to: ["quiet"]) { listener in
            let before = listener.generation(of: "quiet")
            let waiter = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return await listener.wait(on: "quiet", after: before, timeout: .seconds(3600))
            }
            // Should the waiter wait anyway, a notification after a few seconds frees it, and the
            // generation it returns shows that it waited.
            let rescue = Task {
                try await Task.sleep(for: .seconds(5))
                try await notify("quiet")
            }
            #expect(await waiter.value == before)
            rescue.cancel()
        }
    }

    @Test("after its session is killed the listener reconnects, wakes waiters, and hears later notifications")
    func reconnects() async throws {
        try await whileListening(to: ["events"]) { listener in
            let before = listener.generation(of: "events")
            try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
                try await pool.withConnection {
                    // Only this test's database: other tests' listeners share the cluster.
                    try $0.execute(
                        """
                        SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                        WHERE datname = current_database() AND query LIKE 'LISTEN%'
                        """
                    )
                }
            }
            let afterReconnect = await listener.wait(on: "events", after: before, timeout: .seconds(60))
            #expect(afterReconnect > before)
            while !listener.isListening { try await Task.sleep(for: .milliseconds(10)) }
            try await notify("events")
            #expect(await listener.wait(on: "events", after: afterReconnect, timeout: .seconds(60)) > afterReconnect)
        }
    }
}

import Postgres
import TestSupport
import Testing

@Suite("Query loop: connections lent to tasks, driven without blocking")
struct QueryLoopTests {
    let database: String

    init() async throws {
        database = try await TestDatabase.makeEmpty()
    }

    @Test("500 concurrent callers share a pool of 4; each gets its own answer")
    func concurrentLoad() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 4) { pool in
            let backends = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<500 {
                    group.addTask {
                        try await pool.withAsyncConnection { connection in
                            let rows = try await connection.query("SELECT pg_backend_pid(), \(index)::bigint")
                            let row = try #require(rows.single)
                            #expect(try row.decode(1, as: Int.self) == index)
                            return try row.decode(0, as: Int.self)
                        }
                    }
                }
                return try await group.reduce(into: Set<Int>()) { $0.insert($1) }
            }
            #expect(backends.count <= 4)
        }
    }

    @Test("one thread drives several connections at once: a session waits on the server for another")
    func sessionsWaitOnEachOther() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 2) { pool in
            try await withThrowingTaskGroup(of: Void.self) { group in
                let (held, holding) = AsyncStream.makeStream(of: Void.self)
                group.addTask {
                    try await pool.withAsyncConnection { connection in
                        try await connection.execute("SELECT pg_advisory_lock(42)")
                        holding.yield()
                        // Released only once the other session is queued behind the lock.
                        while try await connection.query(
                            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                        ).single!.decode(0, as: Int.self) == 0 {
                            try await connection.execute("SELECT pg_sleep(0.01)")
                        }
                        try await connection.execute("SELECT pg_advisory_unlock(42)")
                    }
                }
                for await _ in held { break }
                try await pool.withAsyncConnection { connection in
                    // Blocks in the server until the first session, on the same loop, unlocks.
                    try await connection.execute("SELECT pg_advisory_lock(42)")
                    try await connection.execute("SELECT pg_advisory_unlock(42)")
                }
                try await group.waitForAll()
            }
        }
    }

    @Test("a statement larger than the socket's buffers is sent whole")
    func largeStatement() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            let text = String(repeating: "liveline ", count: 2_000_000)
            let length: Int = try await pool.withAsyncConnection { connection in
                try await connection.query("SELECT length(\(text))").single!.decode(0)
            }
            #expect(length == text.utf8.count)
        }
    }

    @Test("server errors keep their details, and the session serves the next statement")
    func serverError() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            try await pool.withAsyncConnection { connection in
                let error = await #expect(throws: PostgresError.self) {
                    try await connection.execute("SELECT 1 / \(0)")
                }
                #expect(error?.code == .server)
                #expect(error?.sqlState?.rawValue == "22012")
                #expect(error?.query == "SELECT 1 / $1")
                let one: Int = try await connection.query("SELECT 1").single!.decode(0)
                #expect(one == 1)
                let script = await #expect(throws: PostgresError.self) {
                    try await connection.executeScript("SELECT 1; SELECT nonsense; SELECT 2")
                }
                #expect(script?.sqlState?.rawValue == "42703")
            }
        }
    }

    @Test("a transaction commits when its body returns and rolls back when it throws or a statement failed")
    func transactions() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            try await pool.withAsyncConnection { connection in
                try await connection.executeScript("CREATE TABLE loop_items (id int PRIMARY KEY)")
                try await connection.transaction { try await $0.execute("INSERT INTO loop_items VALUES (1)") }
                await #expect(throws: CancellationError.self) {
                    try await connection.transaction { connection in
                        try await connection.execute("INSERT INTO loop_items VALUES (2)")
                        throw CancellationError()
                    }
                }
                let swallowed = await #expect(throws: PostgresError.self) {
                    try await connection.transaction { connection in
                        try await connection.execute("INSERT INTO loop_items VALUES (3)")
                        _ = try? await connection.execute("INSERT INTO loop_items VALUES (1)")
                    }
                }
                #expect(swallowed?.sqlState?.rawValue == "25P02")
                let ids: [Int] = try await connection.query("SELECT id FROM loop_items ORDER BY id").map {
                    try $0.decode(0)
                }
                #expect(ids == [1])
            }
        }
    }

    @Test("a connection lent both ways in turn works both ways")
    func blockingAndNonBlocking() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            for round in 0..<3 {
                let viaLoop: Int = try await pool.withAsyncConnection {
                    try await $0.query("SELECT \(round)").single!.decode(0)
                }
                let viaThread: Int = try await pool.withConnection { try $0.query("SELECT \(round)").single!.decode(0) }
                #expect(viaLoop == round && viaThread == round)
            }
        }
    }

    @Test("shutdown waits for a lent connection to come back")
    func shutdownWaitsForLentConnection() async throws {
        let pool = try ConnectionPool(
            configuration: .init(connectionString: database, maximumConnections: 1),
            logger: TestDatabase.logger
        )
        let (lent, lending) = AsyncStream.makeStream(of: Void.self)
        async let answer: Int = pool.withAsyncConnection { connection in
            lending.yield()
            return try await connection.query("SELECT 7 FROM pg_sleep(0.2)").single!.decode(0)
        }
        for await _ in lent { break }
        await pool.shutdown()
        #expect(try await answer == 7)
        let error = await #expect(throws: PostgresError.self) {
            try await pool.withAsyncConnection { try await $0.execute("SELECT 1") }
        }
        #expect(error?.code == .poolShutDown)
    }
}

import EmbeddedPostgres
import Foundation
import Postgres
import Synchronization
import TestSupport
import Testing

@Suite("Connection pool")
struct ConnectionPoolTests {
    let database: String

    init() async throws {
        database = try await TestDatabase.makeEmpty()
    }

    @Test("500 concurrent callers share a pool of 4 and never exceed it")
    func concurrentLoad() async throws {
        // The last of 500 waits for the 499 before it: on a loaded machine that can take longer
        // than the default checkout timeout, which is not what this test is about.
        try await TestDatabase.withPool(database, maximumConnections: 4, checkoutTimeout: .seconds(120)) { pool in
            let backends = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<500 {
                    group.addTask {
                        try await pool.withConnection { connection in
                            let row = try #require(connection.query("SELECT pg_backend_pid(), \(index)::bigint").single)
                            #expect(try row.decode(1, as: Int.self) == index)
                            return try row.decode(0, as: Int.self)
                        }
                    }
                }
                return try await group.reduce(into: Set<Int>()) { $0.insert($1) }
            }
            #expect(backends.count <= 4)
            #expect(!backends.isEmpty)
        }
    }

    @Test("a caller waits for a connection, and gives up after the checkout timeout")
    func checkoutTimeout() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1, checkoutTimeout: .milliseconds(200)) { pool in
            // Held far longer than the timeout, so that a loaded machine that fires the timer late still fires it first.
            let holder = await hold(pool, seconds: 5)
            let error = await #expect(throws: PostgresError.self) {
                try await pool.withConnection { try $0.execute("SELECT 1") }
            }
            #expect(error?.code == .checkoutTimeout)
            try await holder.value
            // The holder returned its connection: the pool serves again.
            let one: Int? = try await pool.withConnection { try $0.query("SELECT 1").single?.decode(0) }
            #expect(one == 1)
        }
    }

    @Test("a waiting caller gets the connection another returns, before the timeout")
    func waiterIsServed() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1, checkoutTimeout: .seconds(10)) { pool in
            let holder = await hold(pool, seconds: 0.3)
            let one: Int? = try await pool.withConnection { try $0.query("SELECT 1").single?.decode(0) }
            try await holder.value
            #expect(one == 1)
        }
    }

    @Test("a cancelled waiter leaves the queue without taking a connection")
    func cancelledWaiter() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1, checkoutTimeout: .seconds(10)) { pool in
            // The connection is held until the waiter has been cancelled, however slow the machine.
            let released = Released()
            let (holding, held) = AsyncStream.makeStream(of: Void.self)
            let holder = Task {
                try await pool.withConnection { connection in
                    held.yield()
                    while !released.value { try connection.execute("SELECT pg_sleep(0.01)") }
                }
            }
            for await _ in holding { break }
            let waiter = Task { try await pool.withConnection { try $0.execute("SELECT 1") } }
            try await Task.sleep(for: .milliseconds(50))
            waiter.cancel()
            await #expect(throws: CancellationError.self) { try await waiter.value }
            released.release()
            try await holder.value
            let one: Int? = try await pool.withConnection { try $0.query("SELECT 1").single?.decode(0) }
            #expect(one == 1)
        }
    }

    @Test("a caller whose task is cancelled before it asks gets no connection, even when one is free")
    func cancelledBeforeAsking() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            let caller = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await pool.withConnection { try $0.execute("SELECT 1") }
            }
            await #expect(throws: CancellationError.self) { try await caller.value }
            let one: Int? = try await pool.withConnection { try $0.query("SELECT 1").single?.decode(0) }
            #expect(one == 1)
        }
    }

    @Test("a connection killed by the server is replaced before it is lent again")
    func killedConnectionIsReplaced() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            let first: Int = try await pool.withConnection { try $0.query("SELECT pg_backend_pid()").single!.decode(0) }
            try await TestDatabase.withPool(database, maximumConnections: 1) { other in
                try await other.withConnection { try $0.execute("SELECT pg_terminate_backend(\(Int32(first)))") }
            }
            try await Task.sleep(for: .milliseconds(100))
            let second: Int = try await pool.withConnection {
                try $0.query("SELECT pg_backend_pid()").single!.decode(0)
            }
            #expect(second != first)
        }
    }

    @Test("a connection that breaks during use is reported as a connection failure and dropped")
    func brokenDuringUse() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            let error = await #expect(throws: PostgresError.self) {
                try await pool.withConnection { connection in
                    try connection.execute("SELECT pg_terminate_backend(pg_backend_pid())")
                }
            }
            #expect(error?.isConnectionFailure == true)
            let one: Int? = try await pool.withConnection { try $0.query("SELECT 1").single?.decode(0) }
            #expect(one == 1)
        }
    }

    @Test("a connection left inside a transaction is not lent again")
    func leftInTransaction() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            let first: Int = try await pool.withConnection { connection in
                try connection.executeScript("BEGIN")
                return try connection.query("SELECT pg_backend_pid()").single!.decode(0)
            }
            let second: Int = try await pool.withConnection {
                try $0.query("SELECT pg_backend_pid()").single!.decode(0)
            }
            #expect(second != first)
        }
    }

    @Test("the pool survives a PostgreSQL restart without being restarted itself")
    func survivesRestart() async throws {
        try await TestDatabase.withPrivateCluster { cluster in
            let url = cluster.url(database: cluster.defaultDatabase)
            try await TestDatabase.withPool(url, maximumConnections: 3) { pool in
                // Open a few connections so several idle ones go stale at once.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<3 {
                        group.addTask { _ = try await pool.withConnection { try $0.execute("SELECT pg_sleep(0.1)") } }
                    }
                    try await group.waitForAll()
                }
                try await TestDatabase.offCooperativePool { try cluster.stop() }
                let down = await #expect(throws: PostgresError.self) {
                    try await pool.withConnection { try $0.execute("SELECT 1") }
                }
                #expect(down?.isConnectionFailure == true)

                try await TestDatabase.offCooperativePool { try cluster.restart() }
                for _ in 0..<6 {
                    let one: Int? = try await pool.withConnection { try $0.query("SELECT 1").single?.decode(0) }
                    #expect(one == 1)
                }
            }
        }
    }

    @Test("an outage is two lines in the log, however much fails meanwhile: when it begins, and when it ends")
    func outageLoggedOnce() async throws {
        try await TestDatabase.withPrivateCluster { cluster in
            let recorder = LogRecorder()
            let pool = try ConnectionPool(
                configuration: .init(connectionString: cluster.url(database: cluster.defaultDatabase)),
                logger: recorder.logger(label: "pool")
            )
            try await pool.using { pool in
                try await pool.withConnection { try $0.execute("SELECT 1") }
                #expect(!pool.outage.isOngoing)
                try await TestDatabase.offCooperativePool { try cluster.stop() }
                for _ in 0..<20 {
                    await #expect(throws: PostgresError.self) {
                        try await pool.withConnection { try $0.execute("SELECT 1") }
                    }
                    pool.outage.refused("a request")
                }
                #expect(pool.outage.isOngoing)
                try await TestDatabase.offCooperativePool { try cluster.restart() }
                for _ in 0..<5 { try await pool.withConnection { try $0.execute("SELECT 1") } }
                #expect(!pool.outage.isOngoing)
            }
            let outage = recorder.lines.filter { $0.contains("reached") }
            #expect(outage.count == 2, "\(outage)")
            #expect(outage.first?.hasPrefix("warning the database cannot be reached") == true, "\(outage)")
            #expect(outage.last?.hasPrefix("notice the database can be reached again") == true, "\(outage)")
            #expect(outage.last?.contains(#""requests_refused": 20"#) == true, "\(outage)")
        }
    }

    @Test("a shut-down pool refuses new work")
    func shutDown() async throws {
        let pool = try ConnectionPool(configuration: .init(connectionString: database), logger: TestDatabase.logger)
        try await pool.withConnection { try $0.execute("SELECT 1") }
        await pool.shutdown()
        let error = await #expect(throws: PostgresError.self) {
            try await pool.withConnection { try $0.execute("SELECT 1") }
        }
        #expect(error?.code == .poolShutDown)
    }

    /// Starts a caller that holds one of the pool's connections for `seconds`, and returns once it
    /// holds it (however long a loaded machine takes to get there).
    @Test("lendNow runs at once on a pool thread when a connection is free, and refuses (nothing runs) when none is")
    func lendNow() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1, checkoutTimeout: .seconds(10)) { pool in
            let (answers, answer) = AsyncStream.makeStream(of: Int?.self)
            let lent = pool.lendNow { connection in
                answer.yield(try? connection.get().query("SELECT 1").single?.decode(0))
            }
            #expect(lent)
            for await one in answers {
                #expect(one == 1)
                break
            }
            // Held long enough for a loaded machine (the whole suite at once) to ask while it is.
            let holder = await hold(pool, seconds: 5)
            #expect(!pool.lendNow { _ in Issue.record("ran with every connection lent") })
            try await holder.value
            // The connection came back: the pool lends it again.
            let one: Int? = try await pool.withConnection { try $0.query("SELECT 1").single?.decode(0) }
            #expect(one == 1)
        }
    }

    private func hold(_ pool: ConnectionPool, seconds: Double) async -> Task<Void, any Error> {
        let (holding, held) = AsyncStream.makeStream(of: Void.self)
        let holder = Task {
            try await pool.withConnection {
                held.yield()
                try $0.execute("SELECT pg_sleep(\(seconds))")
            }
        }
        for await _ in holding { break }
        return holder
    }
}

/// Whether a held connection may be given back.
private final class Released: Sendable {
    private let released = Mutex(false)

    func release() { released.withLock { $0 = true } }
    var value: Bool { released.withLock { $0 } }
}

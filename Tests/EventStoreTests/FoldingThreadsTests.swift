import Dispatch
import EventStore
import Postgres
import Synchronization
import TestSupport
import Testing

@Suite("Reading the log while folding it: two things at once")
struct FoldingThreadsTests {
    @Test("statements run while work runs on another thread: both values, and errors of either")
    func overlap() async throws {
        let database = try await TestDatabase.makeMigrated()
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            try await pool.withConnection { connection in
                let threads = FoldingThreads()
                defer { threads.shutDown() }
                // Each side waits for the other: only running both at once gets past both waits.
                let statementsRan = DispatchSemaphore(value: 0)
                let workRan = DispatchSemaphore(value: 0)
                let worked = Atomic(0)
                let (rows, value) = try threads.run {
                    let rows = try connection.query("SELECT generate_series(1, 3)::integer")
                    statementsRan.signal()
                    return (rows, workRan.wait(timeout: .now() + 10) == .success)
                } meanwhile: {
                    worked.add(1, ordering: .relaxed)
                    defer { workRan.signal() }
                    return statementsRan.wait(timeout: .now() + 10) == .success
                }
                #expect(try rows.0.map { try $0.decode(0, as: Int32.self) } == [1, 2, 3])
                #expect(rows.1 && value && worked.load(ordering: .relaxed) == 1)

                struct WorkFailed: Error {}
                #expect(throws: WorkFailed.self) {
                    try threads.run {
                        try connection.query("SELECT pg_sleep(0.05)")
                    } meanwhile: {
                        throw WorkFailed()
                    }
                }
                let refused = try #require(throws: PostgresError.self) {
                    try threads.run {
                        try connection.query("SELECT 1 / 0")
                    } meanwhile: {
                        worked.add(1, ordering: .relaxed)
                    }
                }
                #expect(refused.sqlState?.rawValue == "22012")
                #expect(worked.load(ordering: .relaxed) == 2)
                // The session is ready for the next statement after each.
                let one: Int32 = try connection.query("SELECT 1").single!.decode(0)
                #expect(one == 1)
            }
        }
    }
}

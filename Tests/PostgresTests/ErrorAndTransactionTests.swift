import Foundation
import Postgres
import Synchronization
import TestSupport
import Testing

@Suite("SQLSTATE errors and transactions")
struct ErrorAndTransactionTests {
    let database: String

    init() async throws {
        database = try await TestDatabase.makeEmpty()
        try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                try connection.execute("CREATE TABLE items (id integer PRIMARY KEY, label text NOT NULL)")
            }
        }
    }

    @Test("a malformed connection string is refused before connecting, with libpq's reason")
    func badConnectionString() throws {
        for malformed in ["host='unterminated", "postgresql://localhost/db?no_such_option=1", "dbname"] {
            let error = try #require(throws: PostgresError.self) { try Connection.connect(malformed) }
            #expect(error.code == .invalidConnectionString, "\(malformed)")
            #expect(error.message.hasPrefix("invalid database connection string: "))
        }
    }

    @Test("an unreachable server is a connection failure")
    func unreachable() throws {
        let error = try #require(throws: PostgresError.self) {
            try Connection.connect("host=/nonexistent-liveline-socket dbname=x")
        }
        #expect(error.code == .connectionFailure)
        #expect(error.isConnectionFailure)
        #expect(error.description == "database unavailable")
    }

    @Test("a unique violation carries its SQLSTATE and constraint")
    func uniqueViolation() async throws {
        let error = try await #require(throws: PostgresError.self) {
            try await TestDatabase.withPool(database) { pool in
                try await pool.withConnection { connection in
                    try connection.execute("INSERT INTO items VALUES (\(Int32(1)), \("a"))")
                    try connection.execute("INSERT INTO items VALUES (\(Int32(1)), \("b"))")
                }
            }
        }
        #expect(error.isUniqueViolation)
        #expect(error.code == .server)
        #expect(error.constraint == "items_pkey")
        #expect(error.table == "items")
        // Clients see only the kind of failure; logs get everything.
        #expect(error.description == "database error (SQLSTATE 23505)")
        #expect(error.debugDescription.contains("duplicate key"))
        #expect(error.debugDescription.contains("INSERT INTO items"))
    }

    @Test("logs get the failure without the data PostgreSQL quotes: a failing row, a key's values, unreadable text")
    func detailsWithoutData() async throws {
        func failure(_ statements: [PostgresQuery]) async throws -> PostgresError {
            try await #require(throws: PostgresError.self) {
                try await TestDatabase.withPool(database) { pool in
                    try await pool.withConnection { connection in
                        for statement in statements { try connection.execute(statement) }
                    }
                }
            }
        }
        let secret = "Ada Lovelace, 12 Crescent Road"
        let key = try await failure([
            "INSERT INTO items VALUES (\(Int32(7)), \(secret))", "INSERT INTO items VALUES (\(Int32(7)), \(secret))",
        ])
        #expect(key.detail?.contains("7") == true)
        #expect(key.debugDescription.contains("detail: Key (id)=(left out) already exists."))
        try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection {
                try $0.execute("ALTER TABLE items ADD CONSTRAINT short_names CHECK (length(label) < 10) NOT VALID")
            }
        }
        let row = try await failure(["INSERT INTO items VALUES (\(Int32(8)), \(secret))"])
        #expect(row.detail?.contains(secret) == true)
        #expect(
            !row.debugDescription.contains(secret) && row.debugDescription.contains("Failing row contains (left out)")
        )
        let text = try await failure(["SELECT \(secret)::jsonb"])
        #expect(!text.debugDescription.contains("Ada"))
    }

    @Test("a syntax error is a server error with its SQLSTATE")
    func syntaxError() async throws {
        let error = try await #require(throws: PostgresError.self) {
            try await TestDatabase.withPool(database) { pool in
                try await pool.withConnection { try $0.execute("SELEC 1") }
            }
        }
        #expect(error.sqlState == .syntaxError)
        #expect(!error.isConnectionFailure && !error.isSerializationFailure && !error.isUniqueViolation)
    }

    @Test("two serializable transactions that conflict: one fails with a serialization failure")
    func serializationFailure() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 2) { pool in
            try await pool.withConnection { try $0.execute("INSERT INTO items VALUES (100, 'x')") }
            // Both read the row, then both write it: the second committer must fail. Neither writes
            // before both have read, however slow the machine.
            let read = Count()
            let results = await withTaskGroup(of: (any Error)?.self) { group in
                for label in ["first", "second"] {
                    group.addTask {
                        do {
                            try await pool.withTransaction(isolation: .serializable) { connection in
                                _ = try connection.query("SELECT label FROM items WHERE id = 100")
                                read.add()
                                while read.value < 2 { usleep(10_000) }
                                try connection.execute("UPDATE items SET label = \(label) WHERE id = 100")
                            }
                            return nil
                        } catch {
                            return error
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            let failures = results.compactMap { $0 as? PostgresError }
            #expect(failures.count == 1)
            #expect(failures.first?.isSerializationFailure == true)
        }
    }

    @Test("a transaction commits when its body returns")
    func commits() async throws {
        try await TestDatabase.withPool(database) { pool in
            try await pool.withTransaction { try $0.execute("INSERT INTO items VALUES (200, 'kept')") }
            let label: String? = try await pool.withConnection {
                try $0.query("SELECT label FROM items WHERE id = 200").single?.decode(0)
            }
            #expect(label == "kept")
        }
    }

    struct Abort: Error {}

    @Test("a transaction rolls back when its body throws")
    func rollsBack() async throws {
        try await TestDatabase.withPool(database) { pool in
            await #expect(throws: Abort.self) {
                try await pool.withTransaction { connection in
                    try connection.execute("INSERT INTO items VALUES (300, 'lost')")
                    throw Abort()
                }
            }
            let count: Int = try await pool.withConnection {
                try $0.query("SELECT count(*) FROM items WHERE id = 300").single?.decode(0) ?? -1
            }
            #expect(count == 0)
        }
    }

    @Test("a swallowed statement error does not commit the aborted transaction silently")
    func swallowedErrorIsNotCommitted() async throws {
        try await TestDatabase.withPool(database) { pool in
            let error = await #expect(throws: PostgresError.self) {
                try await pool.withTransaction { connection in
                    try connection.execute("INSERT INTO items VALUES (400, 'first')")
                    _ = try? connection.execute("INSERT INTO items VALUES (400, 'duplicate')")
                }
            }
            #expect(error?.sqlState?.rawValue == "25P02")
            let count: Int = try await pool.withConnection {
                try $0.query("SELECT count(*) FROM items WHERE id = 400").single?.decode(0) ?? -1
            }
            #expect(count == 0)
        }
    }

    @Test("the isolation level is the one asked for", arguments: IsolationLevel.allCases)
    func isolationLevel(level: IsolationLevel) async throws {
        let expected =
            switch level {
            case .readCommitted: "read committed"
            case .repeatableRead: "repeatable read"
            case .serializable: "serializable"
            }
        let actual: String? = try await TestDatabase.withPool(database) { pool in
            try await pool.withTransaction(isolation: level) {
                try $0.query("SHOW transaction_isolation").single?.decode(0)
            }
        }
        #expect(actual == expected)
    }

    @Test("the connection is usable after a failed statement outside a transaction")
    func usableAfterError() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            await #expect(throws: PostgresError.self) { try await pool.withConnection { try $0.execute("SELECT 1/0") } }
            let one: Int? = try await pool.withConnection { try $0.query("SELECT 1").single?.decode(0) }
            #expect(one == 1)
        }
    }
}

/// A count that tasks share.
private final class Count: Sendable {
    private let count = Mutex(0)

    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

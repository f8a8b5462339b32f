import Foundation
import Postgres
import TestSupport
import Testing

@Suite("The event table is append-only")
struct AppendOnlyEventLogTests {
    let database: String

    init() async throws {
        database = try await TestDatabase.makeMigrated()
        try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                try connection.execute("INSERT INTO apps (app_id, bundle_id) VALUES ('demo', 'com.example.demo')")
                try connection.execute(
                    """
                    INSERT INTO events (position, app_id, activity_id, version, type, data, caused_by, occurred_at)
                    VALUES (pg_current_xact_id()::text::bigint << 16, 'demo', 'a1', 1, 'activity.requested', '{}', 'app', now())
                    """
                )
            }
        }
    }

    /// Runs `statement` as the service role and returns the refusal.
    private func refusal(_ statement: PostgresQuery, role: String?) async throws -> PostgresError? {
        try await TestDatabase.withPool(database) { pool in
            await #expect(throws: PostgresError.self) {
                try await pool.withTransaction { connection in
                    if let role {
                        try connection.execute("SET LOCAL ROLE \(identifier: role)")
                    }
                    try connection.execute(statement)
                }
            }
        }
    }

    @Test(
        "UPDATE, DELETE and TRUNCATE are refused, for the owner and for the service role",
        arguments: [nil, "liveline_service"]
    )
    func refused(role: String?) async throws {
        for statement: PostgresQuery in [
            "UPDATE events SET type = 'activity.ended'", "DELETE FROM events", "TRUNCATE events",
        ] {
            let error = try await refusal(statement, role: role)
            #expect(error?.sqlState == .insufficientPrivilege, "\(statement.sql) as \(role ?? "owner")")
        }
        let count: Int? = try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { try $0.query("SELECT count(*) FROM events").single?.decode(0) }
        }
        #expect(count == 1)
    }

    @Test(
        "ids (the liveline_id domain of every table) are 1 to 128 of A-Z, a-z, 0-9, '.', '_', ':' and '-'",
        arguments: [
            ("a", true), ("Order-42_b.c:d", true), (String(repeating: "x", count: 128), true), ("", false),
            (String(repeating: "x", count: 129), false), ("a b", false), ("é", false), ("a/b", false),
            ("a\nb", false), ("-", true),
        ]
    )
    func ids(id: String, isValid: Bool) async throws {
        let insert: PostgresQuery = """
            INSERT INTO events (position, app_id, activity_id, version, type, data, caused_by, occurred_at)
            VALUES (pg_current_xact_id()::text::bigint << 16, 'demo', \(id), 1, 'activity.requested', '{}', 'app', now())
            """
        if isValid {
            try await TestDatabase.withPool(database) { pool in
                try await pool.withTransaction { connection in
                    try connection.execute("SET LOCAL ROLE liveline_service")
                    try connection.execute(insert)
                }
            }
        } else {
            let error = try await refusal(insert, role: "liveline_service")
            #expect(error?.sqlState == .checkViolation, "\(id)")
        }
    }

    @Test("the service role may append and read events")
    func serviceRoleAppends() async throws {
        try await TestDatabase.withPool(database) { pool in
            try await pool.withTransaction { connection in
                try connection.execute("SET LOCAL ROLE liveline_service")
                try connection.execute(
                    """
                    INSERT INTO events (position, app_id, activity_id, version, type, caused_by, occurred_at)
                    VALUES (pg_current_xact_id()::text::bigint << 16, 'demo', 'a1', 2, 'activity.updated', 'app', now())
                    """
                )
            }
            let versions: [Int] = try await pool.withConnection { connection in
                try connection.query("SELECT version FROM events ORDER BY position").map { try $0.decode(0) }
            }
            #expect(versions == [1, 2])
        }
    }

    @Test("the dashboard role reads but cannot write")
    func dashboardRoleIsReadOnly() async throws {
        let error = try await refusal(
            "INSERT INTO events (position, app_id, activity_id, version, type, caused_by, occurred_at) VALUES (pg_current_xact_id()::text::bigint << 16, 'demo', 'a2', 1, 'activity.requested', 'app', now())",
            role: "liveline_dashboard"
        )
        #expect(error?.sqlState == .insufficientPrivilege)
        let count: Int? = try await TestDatabase.withPool(database) { pool in
            try await pool.withTransaction { connection in
                try connection.execute("SET LOCAL ROLE liveline_dashboard")
                return try connection.query("SELECT count(*) FROM events").single?.decode(0)
            }
        }
        #expect(count == 1)
    }

    @Test("a stream cannot hold the same version twice (every event of a stream carries when it began)")
    func uniqueVersions() async throws {
        let error = await #expect(throws: PostgresError.self) {
            try await TestDatabase.withPool(database) { pool in
                try await pool.withConnection { connection in
                    try connection.execute(
                        """
                        INSERT INTO events (position, app_id, activity_id, version, type, caused_by, occurred_at,
                                            stream_recorded_at)
                        SELECT pg_current_xact_id()::text::bigint << 16, 'demo', 'a1', 1, 'activity.updated', 'app', now(),
                               stream_recorded_at
                        FROM events WHERE app_id = 'demo' AND activity_id = 'a1' AND version = 1
                        """
                    )
                }
            }
        }
        #expect(error?.isUniqueViolation == true)
    }
}

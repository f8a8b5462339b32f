import Dispatch
import Postgres
import TestSupport
import Testing

@Suite("COPY FROM STDIN and server-side cursors")
struct CopyAndCursorTests {
    let database: String

    init() async throws {
        database = try await TestDatabase.makeEmpty()
        try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                try connection.execute("CREATE TABLE notes (id integer PRIMARY KEY, body text, data jsonb)")
            }
        }
    }

    @Test("COPY stores every value as sent: escapes, NULL, JSON with backslashes, non-ASCII")
    func copyRoundTrip() async throws {
        let values: [String?] = ["tab\there", "line\nbreak\r\n", #"back\slash \N"#, nil, "héllo ✓", ""]
        let stored = try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                // In two pieces, sent one after the other.
                var pieces = [CopyTextRows(), CopyTextRows()]
                for (index, value) in values.enumerated() {
                    pieces[index % 2].appendRow([String(index), value, #"{"quote": "a \"b\" \\ c"}"#])
                }
                #expect(pieces.map(\.count) == [3, 3])
                let copied = try connection.copyIn("COPY notes (id, body, data) FROM STDIN", rows: pieces)
                #expect(copied == values.count)
                return try connection.query("SELECT body, data ->> 'quote' FROM notes ORDER BY id").map { row in
                    (try row.decode(0, as: String?.self), try row.decode(1, as: String.self))
                }
            }
        }
        #expect(stored.map(\.0) == values)
        #expect(stored.allSatisfy { $0.1 == #"a "b" \ c"# })
    }

    @Test("a COPY the server refuses stores nothing, throws its error, and leaves the session usable")
    func copyFailure() async throws {
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            try await pool.withConnection { connection in
                var rows = CopyTextRows()
                rows.appendRow(["100", "first", "{}"])
                rows.appendRow(["100", "duplicate", "{}"])
                let error = try #require(throws: PostgresError.self) {
                    try connection.copyIn("COPY notes (id, body, data) FROM STDIN", rows: [rows])
                }
                #expect(error.sqlState == .uniqueViolation)
                let malformed = try #require(throws: PostgresError.self) {
                    try connection.copyIn("COPY no_such_table FROM STDIN", rows: [rows])
                }
                #expect(malformed.sqlState == .undefinedTable)
                let count: Int = try connection.query("SELECT count(*) FROM notes WHERE id = 100").single!.decode(0)
                #expect(count == 0)
            }
        }
    }

    @Test("a cursor declared with parameters is fetched in batches of binary rows")
    func cursor() async throws {
        let batches = try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                try connection.transaction { connection in
                    try connection.execute(
                        "INSERT INTO notes (id, body) SELECT n, 'n' || n FROM generate_series(1, 25) n"
                    )
                    try connection.execute(
                        "DECLARE pages NO SCROLL CURSOR FOR SELECT id, body FROM notes WHERE id > \(5) ORDER BY id"
                    )
                    var batches: [[Int]] = []
                    while true {
                        let rows = try connection.query("FETCH 7 FROM pages")
                        if rows.isEmpty { break }
                        batches.append(try rows.map { try $0.decode(0) })
                    }
                    return batches
                }
            }
        }
        #expect(batches.map(\.count) == [7, 7, 6])
        #expect(batches.flatMap { $0 } == Array(6...25))
    }
}

extension CopyTextRows {
    /// A row of text values (`nil` is NULL), field by field.
    mutating func appendRow(_ values: [String?]) {
        for value in values { appendField(value) }
        endRow()
    }
}

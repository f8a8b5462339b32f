import Foundation
import Postgres
import TestSupport
import Testing

@Suite("Parameters and typed decoding")
struct TypeDecodingTests {
    let database: String

    init() async throws {
        database = try await TestDatabase.makeEmpty()
    }

    /// Sends `value` as a parameter of `query` and decodes the single value it selects.
    private func roundTrip<T: PostgresEncodable & PostgresDecodable>(
        _ value: T,
        _ query: @escaping @Sendable (T) -> PostgresQuery
    ) async throws -> T {
        try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                try #require(connection.query(query(value)).single).decode(0, as: T.self)
            }
        }
    }

    @Test(
        "text, including non-ASCII and the empty string",
        arguments: ["", "hello", "Grüße 👋 — \"quoted\" 'single'", String(repeating: "x", count: 100_000)]
    )
    func text(value: String) async throws {
        #expect(try await roundTrip(value) { "SELECT \($0)::text" } == value)
    }

    @Test("bigint, at its limits", arguments: [0, 1, -1, Int.max, Int.min])
    func bigint(value: Int) async throws {
        #expect(try await roundTrip(value) { "SELECT \($0)::bigint" } == value)
    }

    @Test("integer, at its limits", arguments: [Int32.max, Int32.min, 42])
    func integer(value: Int32) async throws {
        #expect(try await roundTrip(value) { "SELECT \($0)::integer" } == value)
    }

    @Test("bool", arguments: [true, false])
    func bool(value: Bool) async throws {
        #expect(try await roundTrip(value) { "SELECT \($0)::boolean" } == value)
    }

    @Test("double precision", arguments: [0.0, 1.5, -2.25e300, Double.leastNonzeroMagnitude])
    func double(value: Double) async throws {
        #expect(try await roundTrip(value) { "SELECT \($0)::double precision" } == value)
    }

    @Test("timestamptz keeps microseconds, before and after 2000")
    func timestamptz() async throws {
        for value in [
            Date(timeIntervalSince1970: 1_795_000_000.123456), Date(timeIntervalSince1970: 0),
            Date(timeIntervalSince1970: -1_000_000.5),
        ] {
            let decoded = try await roundTrip(value) { "SELECT \($0)::timestamptz" }
            #expect(abs(decoded.timeIntervalSince(value)) < 0.000_001)
        }
    }

    @Test("timestamptz infinity decodes to the distant dates")
    func infinity() async throws {
        try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                let row = try #require(
                    connection.query("SELECT 'infinity'::timestamptz, '-infinity'::timestamptz").single
                )
                #expect(try row.decode(0, as: Date.self) == .distantFuture)
                #expect(try row.decode(1, as: Date.self) == .distantPast)
            }
        }
    }

    @Test("uuid")
    func uuid() async throws {
        let value = UUID()
        #expect(try await roundTrip(value) { "SELECT \($0)::uuid" } == value)
    }

    @Test("jsonb is carried as its text and normalised by the server")
    func jsonb() async throws {
        let decoded = try await roundTrip(JSONB(#"{"b": [1, 2], "a": "é"}"#)) { "SELECT \($0)::jsonb" }
        #expect(decoded.text == #"{"a": "é", "b": [1, 2]}"#)
    }

    @Test("bytea, including zero bytes")
    func bytea() async throws {
        let value: [UInt8] = [0, 1, 2, 255, 0, 128]
        #expect(try await roundTrip(value) { "SELECT \($0)::bytea" } == value)
        #expect(try await roundTrip([UInt8]()) { "SELECT \($0)::bytea" } == [])
    }

    @Test(
        "arrays: with NULL elements, empty, and of each element type the store sends, read by the server element by element"
    )
    func arrays() async throws {
        let texts: [String?] = ["a", nil, "Grüße 👋", "", nil]
        #expect(try await roundTrip(PostgresArray(texts)) { "SELECT \($0)::text[]" }.elements == texts)
        #expect(try await roundTrip(PostgresArray<String>([])) { "SELECT \($0)::text[]" }.elements == [])
        let numbers: [Int32] = [1, -1, .max, .min]
        #expect(try await roundTrip(PostgresArray(numbers)) { "SELECT \($0)::integer[]" }.elements == numbers)
        let times = [PostgresTimestamp(microsecondsSince1970: 1), PostgresTimestamp(microsecondsSince1970: -1)]
        #expect(try await roundTrip(PostgresArray(times)) { "SELECT \($0)::timestamptz[]" }.elements == times)
        let digests: [[UInt8]?] = [[0, 255], nil, []]
        #expect(try await roundTrip(PostgresArray(digests)) { "SELECT \($0)::bytea[]" }.elements == digests)
        let documents = [JSONB(#"{"a":1}"#), JSONB("[]")]
        try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                let row = try #require(
                    connection.query(
                        """
                        SELECT cardinality(\(PostgresArray(texts))), array_position(\(PostgresArray(texts)), NULL),
                               (\(PostgresArray(documents)))[1] ->> 'a', jsonb_typeof((\(PostgresArray(documents)))[2])
                        """
                    ).single
                )
                #expect(try row.decode(0, as: Int32.self) == 5)
                #expect(try row.decode(1, as: Int32.self) == 2)
                #expect(try row.decode(2, as: String.self) == "1")
                #expect(try row.decode(3, as: String.self) == "array")
            }
        }
    }

    @Test("NULL parameters and optional decoding")
    func nulls() async throws {
        try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                let missing: String? = nil
                let present: Int? = 7
                let query: PostgresQuery = "SELECT \(missing)::text, \(present)::bigint"
                let rows = try connection.query(query)
                let row = try #require(rows.single)
                #expect(try row.decode(0, as: String?.self) == nil)
                #expect(try row.decode(1, as: Int?.self) == 7)
                #expect(throws: PostgresError.self) { try row.decode(0, as: String.self) }
            }
        }
    }

    @Test("decoding into the wrong type is a decoding error naming the column")
    func wrongType() async throws {
        try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                let row = try #require(connection.query("SELECT 'x'::text AS label, 5::bigint AS count").single)
                let error = try #require(throws: PostgresError.self) { try row.decode("label", as: Int.self) }
                #expect(error.code == .decoding)
                #expect(error.message.contains("label"))
                #expect(try row.decode("count", as: Int.self) == 5)
                #expect(throws: PostgresError.self) { try row.decode("nope", as: Int.self) }
            }
        }
    }

    @Test("a value interpolated into a query is a parameter, never SQL")
    func interpolationIsParameterised() async throws {
        try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                let hostile = "'; DROP TABLE pg_class; --"
                let query: PostgresQuery = "SELECT \(hostile)::text AS value"
                #expect(query.sql == "SELECT $1::text AS value")
                let value = try connection.query(query).single?.decode(0, as: String.self)
                #expect(value == hostile)
            }
        }
    }
}

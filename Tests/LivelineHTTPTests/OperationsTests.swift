import ActivityLifecycle
import CanonicalJSON
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import OpenAPIRuntime
import Postgres
import TestSupport
import Testing

@testable import Delivery
@testable import EventStore
@testable import LivelineHTTP

@Suite("Operations: health, readiness, metrics and the OpenAPI document over real HTTP")
struct OperationsTests {
    static let unreachable = "host=/nonexistent-liveline-socket dbname=none"

    @Test("/healthz answers 200 while the process runs, whatever the database")
    func healthz() async throws {
        try await APIFixture.run(database: Self.unreachable) { api in
            let status = try await api.client(key: nil).getHealth().ok.body.json.status
            #expect(status == "ok")
        }
    }

    @Test("/readyz answers 200 on a reachable, migrated database")
    func ready() async throws {
        try await APIFixture.run { api in
            let status = try await api.client(key: nil).getReadiness().ok.body.json.status
            #expect(status == "ready")
        }
    }

    @Test("/readyz answers 200 degraded, and says why, while delivery cannot fold some activities' logs")
    func degraded() async throws {
        let health = DeliveryHealth()
        try await APIFixture.run(delivery: health) { api in
            #expect(try await api.client(key: nil).getReadiness().ok.body.json.status == "ready")
            health.report(unreadableStreams: 2)
            let body = try await api.client(key: nil).getReadiness().ok.body.json
            #expect(body.status == "degraded")
            #expect(body.degraded?.map(\.code) == ["delivery_unreadable_streams"])
            #expect(body.degraded?.first?.detail.contains("of 2 activities") == true)
            health.report(unreadableStreams: 0)
            #expect(try await api.client(key: nil).getReadiness().ok.body.json.status == "ready")
        }
    }

    @Test("/readyz answers 200 degraded, and says why, while the log's maintenance fails")
    func maintenanceFailing() async throws {
        let health = MaintenanceHealth()
        try await APIFixture.run(maintenance: health) { api in
            #expect(try await api.client(key: nil).getReadiness().ok.body.json.status == "ready")
            health.report(.retention, failure: "relation \"idempotency_keys\" does not exist")
            let body = try await api.client(key: nil).getReadiness().ok.body.json
            #expect(body.status == "degraded")
            #expect(body.degraded?.map(\.code) == ["maintenance_failing"])
            #expect(body.degraded?.first?.detail.contains("idempotency_keys") == true)
            health.report(.retention, failure: nil)
            #expect(try await api.client(key: nil).getReadiness().ok.body.json.status == "ready")
        }
    }

    @Test("/readyz answers 503 migrations_pending, naming the files, before migrate")
    func pendingMigrations() async throws {
        try await APIFixture.run(database: try await TestDatabase.makeEmpty()) { api in
            let body = try await api.client(key: nil).getReadiness().serviceUnavailable.body.applicationProblemJson
            #expect(body.code == "migrations_pending")
            #expect(body.status == 503)
            // A new database is to be made from the baseline.
            #expect(body.detail.contains("baseline/") && body.detail.contains("_schema.sql"))
        }
    }

    @Test("/readyz answers 503 migrations_pending, naming the file, while a function's definition is not applied")
    func changedFunction() async throws {
        var functions = try FunctionDefinition.load(from: TestDatabase.functionsDirectory)
        functions[0] = FunctionDefinition(name: functions[0].name, sql: functions[0].sql + "\n-- changed\n")
        let changed = functions[0].fileName
        try await APIFixture.run(functions: functions) { api in
            let body = try await api.client(key: nil).getReadiness().serviceUnavailable.body.applicationProblemJson
            #expect(body.code == "migrations_pending")
            #expect(body.detail.contains(changed))
        }
    }

    @Test("/readyz answers 503 migrations_mismatch when an applied migration was edited")
    func editedMigration() async throws {
        var migrations = try Migration.load(from: TestDatabase.migrationsDirectory)
        migrations[0] = Migration(version: 1, name: migrations[0].name, sql: "-- edited")
        try await APIFixture.run(migrations: migrations) { api in
            let body = try await api.client(key: nil).getReadiness().serviceUnavailable.body.applicationProblemJson
            #expect(body.code == "migrations_mismatch")
        }
    }

    @Test("/readyz answers 503 database_unavailable when PostgreSQL cannot be reached, without leaking details")
    func databaseDown() async throws {
        try await APIFixture.run(database: Self.unreachable) { api in
            let body = try await api.client(key: nil).getReadiness().serviceUnavailable.body.applicationProblemJson
            #expect(body.code == "database_unavailable")
            #expect(!body.detail.contains("nonexistent"))
        }
    }

    @Test("An activity route answers 503 database_unavailable, not 500, when PostgreSQL is away")
    func commandWithDatabaseDown() async throws {
        try await APIFixture.run(database: Self.unreachable) { api in
            let response = try await api.send(.get, "/v1/activities/a1", key: "ll_whatever")
            #expect(response.status == .serviceUnavailable)
            #expect(try problem(response).code == "database_unavailable")
        }
    }

    @Test(
        "A write answers 503 log_partition_missing with Retry-After, writing nothing, while the log has no partition for now; once there, the retry succeeds"
    )
    func writeWithoutPartition() async throws {
        let database = try await TestDatabase.makeMigrated()
        // The partition of `events` that holds now, taken away as if the partitions ahead had run
        // out: the statement that puts it back.
        let reattach = try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection -> String in
                let row = try #require(
                    try connection.query(
                        """
                        SELECT format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                            table_name, from_time, to_time) AS reattach, table_name
                        FROM log_partitions WHERE parent = 'events' AND from_time <= now() AND now() < to_time
                        """
                    ).single
                )
                let name: String = try row.decode("table_name")
                try connection.execute("ALTER TABLE events DETACH PARTITION \(identifier: name)")
                return try row.decode("reattach")
            }
        }
        try await APIFixture.run(database: database) { api in
            let app = try await api.makeApp()
            let request = Array(
                #"{"activityId":"o1","activityType":"delivery","attributes":{},"contentState":{}}"#.utf8
            )
            let key: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "request-o1"]
            let refused = try await api.send(.post, "/v1/activities", key: app.key.key, headers: key, body: request)
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.headers[.retryAfter] == "30")
            let answer = try problem(refused)
            #expect(answer.code == "log_partition_missing")
            #expect(answer.detail.contains("no partition of events"))
            let read = try await api.send(.get, "/v1/activities/o1", key: app.key.key)
            #expect(read.status == .notFound)

            try await TestDatabase.withPool(database) { pool in
                try await pool.withConnection { connection in
                    try connection.execute(PostgresQuery(stringLiteral: reattach))
                }
            }
            let retried = try await api.send(.post, "/v1/activities", key: app.key.key, headers: key, body: request)
            #expect(retried.status == .created)
        }
    }

    @Test(
        "a failure that refuses requests by the thousand is logged at once, then a line an interval at most, counting"
    )
    func refusalsLoggedSparingly() async throws {
        let recorder = LogRecorder()
        let log = RefusalLog(
            logger: recorder.logger(label: "test"),
            message: "refused",
            interval: .milliseconds(300)
        )
        for _ in 0..<3 { log.refused("no partition") }
        #expect(recorder.lines.count == 1)
        try await Task.sleep(for: .milliseconds(400))
        log.refused("no partition")
        #expect(recorder.lines.count == 2)
        #expect(recorder.lines.last?.contains(#/refused_since_last_line"?: "?2\b/#) == true)
    }

    @Test("/openapi.yaml serves the document the server and this client were generated from")
    func document() async throws {
        let file = try Data(
            contentsOf: URL(filePath: #filePath).deletingLastPathComponent().appending(path: "openapi.yaml")
        )
        try await APIFixture.run { api in
            let response = try await api.send(.get, "/openapi.yaml", key: nil)
            #expect(response.status == .ok)
            #expect(response.headers[.contentType] == "application/yaml")
            #expect(Data(Array(buffer: response.body)) == file)
        }
    }

    @Test("every operation of the document is served: none answers 404 or 405, with a key or without")
    func everyOperationServed() async throws {
        let document = try String(
            contentsOf: URL(filePath: #filePath).deletingLastPathComponent().appending(path: "openapi.yaml"),
            encoding: .utf8
        )
        // The paths (two spaces in, under `paths:`) and their methods (four spaces in).
        var operations: [(HTTPRequest.Method, String)] = []
        var path: String?
        for line in document.split(separator: "\n").drop(while: { $0 != "paths:" }).dropFirst() {
            if !line.hasPrefix(" ") { break }
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast()).replacing("{activityId}", with: "a1")
                    .replacing(/\{[A-Za-z]+\}/, with: "x")
            } else if let path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":"),
                let method = HTTPRequest.Method(String(line.dropFirst(4).dropLast()).uppercased()),
                [.get, .post, .put, .patch, .delete].contains(method)
            {
                operations.append((method, path))
            }
        }
        #expect(operations.count == 41)
        let served = operations
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            for (method, path) in served {
                // The event stream, with an app's key, answers 200 and never ends.
                let keys =
                    path == "/v1/events/stream" ? [nil, APIFixture.adminKey] : [nil, app.key.key, APIFixture.adminKey]
                for key in keys {
                    let response = try await api.send(
                        method,
                        path,
                        key: key,
                        body: method == .get ? nil : Array("{}".utf8)
                    )
                    #expect(
                        ![.notFound, .methodNotAllowed].contains(response.status)
                            || (try? problem(response).code)
                                .map { !["not_found", "method_not_allowed"].contains($0) } == true,
                        "\(method) \(path): \(response.status)"
                    )
                }
            }
        }
    }

    @Test("/metrics counts requests, appends, rejections by code and open activities by state")
    func metrics() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp(maxOpen: 1)
            for id in ["m1", "m2"] {
                _ = try await app.client.requestActivity(
                    body: .json(.init(activityId: activityID(id), activityType: "T", contentState: .empty))
                )
            }
            let text = try await String(collecting: api.client(key: nil).getMetrics().ok.body.plainText, upTo: 1 << 20)
            #expect(text.contains(#"liveline_events_appended_total{type="activity.requested"}"#))
            #expect(text.contains(#"liveline_rejections_total{code="target_maximum_exceeded"}"#))
            #expect(text.contains(#"liveline_open_activities{state="active"}"#))
            #expect(text.contains("http_server_request_duration"))
        }
    }
}

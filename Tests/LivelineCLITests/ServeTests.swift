import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Postgres
import Synchronization
import TestSupport
import Testing

@Suite("liveline serve: stopping without losing what it acknowledged")
struct ServeTests {
    @Test(
        "SIGTERM under load: the server drains, ends its event streams, exits 0, and every activity it answered 201 for is in the log"
    )
    func drainsOnTerminate() async throws {
        let database = try await TestDatabase.makeMigrated()
        let created = try await LivelineProcess.start(
            ["apps", "create", "demo", "--max-open", "100000"],
            database: database
        ).finish()
        let keyLine = try #require(created.lines.dropFirst().first)
        let key = String(try #require(keyLine.split(separator: ": ").last))
        let (server, port) = try await Loopback.startServer(
            ["serve"],
            database: database,
            environment: ["LIVELINE_LOG_LEVEL": "warning"]
        )
        defer { server.terminate() }  // should the test stop early

        // A client follows the event stream, which never ends on its own; eight clients request
        // activities one after another until the server stops answering; the server is told to
        // stop while they are at it.
        let streamed = Task {
            try await TestClient.withClient(host: "127.0.0.1", port: port, configuration: .init(timeout: .seconds(120)))
            {
                try await $0.get("/v1/events/stream", headers: [.authorization: "Bearer \(key)"])
            }
        }
        let answered = AnsweredCount()
        let acknowledged = try await withThrowingTaskGroup(of: [String].self) { group in
            for client in 0..<8 {
                group.addTask {
                    try await Self.requestActivities(port: port, key: key, prefix: "c\(client)-", answered: answered)
                }
            }
            // Stopped under load, once the clients have been answered a few times each: waiting
            // for that rather than for a fixed time holds on a loaded machine too.
            let deadline = ContinuousClock.now + .seconds(60)
            while answered.value < 40, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            server.terminate()
            return try await group.reduce(into: [String]()) { $0 += $1 }
        }
        let outcome = try await server.finish()
        #expect(outcome.status == 0, "\(outcome.errors)")
        #expect(!acknowledged.isEmpty)
        // The stream was ended by the server, cleanly: every event it sent is whole. (How many it
        // sent before the stop depends on the machine's speed.)
        let stream = try await streamed.value
        #expect(stream.status == .ok)
        let body = stream.body.map { String(buffer: $0) } ?? ""
        #expect(body.hasPrefix(": liveline events of demo after 0\n\n"))
        #expect(body.hasSuffix("\n\n"))
        for block in body.split(separator: "\n\n") where !block.hasPrefix(":") {
            let fields = block.split(separator: "\n").map { $0.prefix { $0 != ":" } }
            #expect(fields == ["id", "event", "data"], "\(block)")
        }

        let recorded = try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                try connection.query(
                    "SELECT activity_id FROM events WHERE app_id = 'demo' AND type = 'activity.requested'"
                ).map { try $0.decode(0, as: String.self) }
            }
        }
        #expect(Set(acknowledged).isSubset(of: Set(recorded)))
    }

    @Test("a port that is taken: serve exits 1 with one line on standard error that names it")
    func portTaken() async throws {
        let database = try await TestDatabase.makeMigrated()
        let (taken, port) = try await Loopback.takenPort()
        let server = try LivelineProcess.start(
            ["serve"],
            database: database,
            environment: [
                "LIVELINE_HOST": "127.0.0.1", "LIVELINE_PORT": "\(port)", "LIVELINE_LOG_LEVEL": "warning",
                // Delivery on, so that its workers stop too when the server cannot start.
                "LIVELINE_SECRET_KEY": SecretKey.random(),
            ]
        )
        let outcome = try await server.finish()
        try await taken.close()
        #expect(outcome.status == 1)
        #expect(outcome.errors.split(separator: "\n").count == 1, "\(outcome.errors)")
        #expect(outcome.errors.hasPrefix("liveline: error: "), "\(outcome.errors)")
        #expect(outcome.errors.contains("\(port)"), "\(outcome.errors)")
    }

    /// Requests activities on one connection until the connection fails; returns the ids that
    /// were answered 201. Any other answer is a failure: a stopping server drains, it does not
    /// refuse or fail the requests it has read.
    private static func requestActivities(
        port: Int,
        key: String,
        prefix: String,
        answered: AnsweredCount
    ) async throws -> [String] {
        try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
            var acknowledged: [String] = []
            while true {
                let id = "\(prefix)\(acknowledged.count)"
                let response: TestClient.Response
                do {
                    response = try await client.post(
                        "/v1/activities",
                        headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                        body: ByteBuffer(string: #"{"activityId": "\#(id)", "activityType": "T", "contentState": {}}"#)
                    )
                } catch {
                    return acknowledged
                }
                guard response.status == .created else {
                    Issue.record("\(id): \(response.status) \(response.body.map { String(buffer: $0) } ?? "")")
                    return acknowledged
                }
                acknowledged.append(id)
                answered.add()
            }
        }
    }
}

/// How many requests the clients have had answered, all together.
private final class AnsweredCount: Sendable {
    private let count = Atomic(0)

    var value: Int { count.load(ordering: .relaxed) }

    func add() {
        count.add(1, ordering: .relaxed)
    }
}

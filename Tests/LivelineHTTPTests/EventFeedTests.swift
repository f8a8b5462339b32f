import ActivityLifecycle
import CanonicalJSON
import EmbeddedPostgres
import EventStore
import Foundation
import Glibc
import HTTPTypes
import HummingbirdTesting
import TestSupport
import Testing

@Suite("The event feed and its Server-Sent Events stream over real HTTP")
struct EventFeedTests {
    @Test("The feed pages forward by position through the app's events only")
    func feed() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp(maxOpen: 10)
            let other = try await api.makeApp()
            _ = try await other.client.requestActivity(
                body: .json(.init(activityId: activityID("theirs"), activityType: "T", contentState: .empty))
            ).created
            for index in 0..<5 {
                _ = try await app.client.requestActivity(
                    body: .json(.init(activityId: activityID("f\(index)"), activityType: "T", contentState: .empty))
                ).created
            }
            try await waitUntilTheFeedShows(5, of: app)
            var after: Int64 = 0
            var seen: [String] = []
            while true {
                let page = try await app.client.readEventFeed(query: .init(after: after, limit: 2)).ok.body.json
                guard !page.events.isEmpty else { break }
                #expect(page.events.map(\.position) == page.events.map(\.position).sorted())
                #expect(page.events.allSatisfy { $0.position > after })
                seen += page.events.map(\.activityId.rawValue)
                after = page.nextAfter
            }
            #expect(seen == (0..<5).map { "f\($0)" })
        }
    }

    @Test("The stream sends stored and new events in order, and resumes after Last-Event-ID")
    func stream() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp(maxOpen: 10)
            for index in 0..<3 {
                _ = try await app.client.requestActivity(
                    body: .json(.init(activityId: activityID("s\(index)"), activityType: "T", contentState: .empty))
                ).created
            }
            try await waitUntilTheFeedShows(3, of: app)
            let port = try #require(api.raw.port)
            let key = app.key.key
            async let live = TestDatabase.offCooperativePool {
                try ServerSentEvents.read(port: port, key: key, lastEventID: nil, count: 5)
            }
            try await Task.sleep(for: .milliseconds(300))
            for index in 0..<2 {
                _ = try await app.client.updateActivity(
                    path: .init(activityId: "s\(index)"),
                    body: .json(.init(contentState: JSONObject(["n": .number(JSONNumber(index))])))
                ).ok
            }
            let received = try await live
            let feed = try await app.client.readEventFeed().ok.body.json.events
            #expect(received.map(\.id) == feed.map(\.position))
            #expect(received.map(\.event) == feed.map(\._type.rawValue))
            let decoded = try received.map {
                try JSONDecoder().decode(Components.Schemas.Event.self, from: Data($0.data.utf8))
            }
            #expect(decoded == feed)

            let resumed = try await TestDatabase.offCooperativePool {
                try ServerSentEvents.read(port: port, key: key, lastEventID: received[2].id, count: 2)
            }
            #expect(resumed.map(\.id) == Array(received[3...].map(\.id)))
        }
    }
}

extension EventFeedTests {
    /// The feed shows a commit once no older transaction is still running anywhere on the server
    /// (other tests' included, which on a loaded machine can take seconds): waits until it shows
    /// `count` events of `app`.
    func waitUntilTheFeedShows(
        _ count: Int,
        of app: (id: AppID, client: Client, key: Components.Schemas.IssuedKey)
    ) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while try await app.client.readEventFeed().ok.body.json.events.count < count {
            guard ContinuousClock.now < deadline else {
                Issue.record("the feed did not show \(count) events within 60 s")
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    @Test("A position beyond the end of the log is answered 409 position_beyond_log, by the feed and the stream")
    func positionBeyondTheLog() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp(maxOpen: 10)
            _ = try await app.client.requestActivity(
                body: .json(.init(activityId: activityID("b0"), activityType: "T", contentState: .empty))
            ).created
            // Positions are far apart (transaction ids × 65,536), and the feed holds back what
            // transactions of other tests' databases may still precede: go far beyond.
            let beyond = Int64(1) << 60
            let feed = try await api.send(.get, "/v1/events?after=\(beyond)", key: app.key.key)
            #expect(feed.status == .conflict)
            let refused = try problem(feed)
            #expect(refused.code == "position_beyond_log")
            #expect(refused.detail("position") == .number(JSONNumber(beyond)))
            guard case .number(let number)? = refused.detail("end"), let end = number.integer else {
                Issue.record("no end in \(refused)")
                return
            }
            #expect(end > 0 && end < beyond)
            let stream = try await api.send(
                .get,
                "/v1/events/stream",
                key: app.key.key,
                headers: [HTTPField.Name("Last-Event-ID")!: "\(end + 1)"]
            )
            #expect(stream.status == .conflict)
            #expect(try problem(stream).code == "position_beyond_log")
            // At the end of the log, the feed is an empty page.
            let atEnd = try await app.client.readEventFeed(query: .init(after: end)).ok.body.json
            #expect(atEnd.events.isEmpty && atEnd.nextAfter == end)
        }
    }

    @Test("A stream opened while PostgreSQL is down is answered 503 database_unavailable, not a 200 that is cut")
    func streamWhileTheDatabaseIsDown() async throws {
        try await TestDatabase.withPrivateCluster { cluster in
            let database = cluster.url(database: cluster.defaultDatabase)
            try await TestDatabase.migrate(database)
            try await APIFixture.run(database: database) { api in
                let app = try await api.makeApp(maxOpen: 10)
                // The key is remembered now: only the stream itself can find the database down.
                _ = try await app.client.readEventFeed().ok
                try await TestDatabase.offCooperativePool { try cluster.stop() }
                let stream = try await api.send(.get, "/v1/events/stream", key: app.key.key)
                #expect(stream.status == .serviceUnavailable)
                #expect(try problem(stream).code == "database_unavailable")
                try await TestDatabase.offCooperativePool { try cluster.restart() }
            }
        }
    }
}

/// A minimal Server-Sent Events reader over a plain socket: it reads until it has `count`
/// events (or a minute passes without a byte: the feed holds events back while other tests'
/// transactions run), then closes the connection.
enum ServerSentEvents {
    struct Event: Equatable {
        var id: Int64
        var event: String
        var data: String
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func read(port: Int, key: String, lastEventID: Int64?, count: Int) throws -> [Event] {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(socket) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw Failure(description: "connect() failed") }
        var request = "GET /v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(key)\r\n"
        request += "Accept: text/event-stream\r\n"
        if let lastEventID { request += "Last-Event-ID: \(lastEventID)\r\n" }
        request += "\r\n"
        _ = request.withCString { send(socket, $0, strlen($0), 0) }

        var text = ""
        var buffer = [UInt8](repeating: 0, count: 4096)
        while parse(text).count < count {
            let read = recv(socket, &buffer, buffer.count, 0)
            guard read > 0 else {
                throw Failure(description: "the stream ended after \(parse(text).count) events: \(text)")
            }
            text += String(decoding: buffer[..<read], as: UTF8.self)
        }
        guard text.hasPrefix("HTTP/1.1 200") else { throw Failure(description: "unexpected response: \(text)") }
        return Array(parse(text).prefix(count))
    }

    /// The complete events in what was read (lines of HTTP chunk framing are ignored).
    private static func parse(_ text: String) -> [Event] {
        var events: [Event] = []
        var current = Event(id: -1, event: "", data: "")
        // Split on either line end: "\r\n" of the chunk framing is one Character in Swift.
        for line in text.components(separatedBy: .newlines) {
            if line.hasPrefix("id: ") {
                current.id = Int64(line.dropFirst(4)) ?? -1
            } else if line.hasPrefix("event: ") {
                current.event = String(line.dropFirst(7))
            } else if line.hasPrefix("data: ") {
                current.data = String(line.dropFirst(6))
                events.append(current)
                current = Event(id: -1, event: "", data: "")
            }
        }
        return events
    }
}

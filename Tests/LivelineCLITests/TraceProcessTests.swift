import ActivityLifecycle
import CanonicalJSON
import Crypto
import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import LocalAPNs
import NIOCore
import Postgres
import TestSupport
import Testing

/// Traces from `liveline serve`, exported over OTLP/HTTP (JSON) to a collector on loopback: a
/// caller's trace continues through the request, its commit and the push it caused, across the
/// queue; an unsampled request keeps nothing; a retry starts a trace of its own, linked.
@Suite("Traces across the process: request, commit, push, APNs' answer", .serialized)
struct TraceProcessTests {
    static let token = String(repeating: "ab", count: 32)
    static let adminKey = "trace-admin-key"

    /// A caller's `traceparent`: a trace and span of its own, sampled or not.
    struct CallerSpan {
        let traceID = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let spanID = (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let sampled: Bool

        var traceparent: String { "00-\(traceID)-\(spanID)-\(sampled ? "01" : "00")" }
    }

    @Test(
        "a sampled caller's trace holds its request, the commit and the push to APNs' answer; an unsampled one nothing"
    )
    func traces() async throws {
        let receiver = try await OTLPReceiver.start()
        let app = AppID(rawValue: "game")!
        let served = try await ServedApps.make([app])
        let (apns, database, key) = (served.apns, served.database, served.keys[app]!)
        let (server, port) = try await Loopback.startServer(
            ["serve"],
            database: database,
            environment: served.environment.merging([
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
                "OTEL_BSP_SCHEDULE_DELAY": "100", "LIVELINE_ADMIN_KEY": Self.adminKey,
                "LIVELINE_CONSOLE_TRACE_URL": "http://jaeger.test/trace/{traceId}",
            ]) { $1 }
        )
        defer { server.terminate() }

        func call(_ method: HTTPRequest.Method, _ path: String, _ body: String, as caller: CallerSpan?) async throws {
            var headers: HTTPFields = [:]
            if let caller { headers[HTTPField.Name("traceparent")!] = caller.traceparent }
            let response = try await ServedApps.call(port: port, method, path, body, key: key, headers: headers)
            #expect(response.status.code < 300, "\(path): \(response.status)")
        }
        try await call(
            .post,
            "/v1/activities",
            #"{"activityId":"match","activityType":"T","contentState":{"step":0}}"#,
            as: nil
        )
        try await call(.put, "/v1/activities/match/push-token", #"{"pushToken":"\#(Self.token)"}"#, as: nil)

        // A sampled update: its trace runs from the caller to APNs' answer.
        let sampled = CallerSpan(sampled: true)
        try await call(.post, "/v1/activities/match/updates", #"{"contentState":{"step":1}}"#, as: sampled)
        let spans = try await Self.waitFor(receiver, "the sampled update's push and its answer") { spans in
            spans.contains { $0.traceID == sampled.traceID && $0.name == "APNs answer" }
        }
        let trace = spans.filter { $0.traceID == sampled.traceID }
        let request = try #require(trace.first { $0.kind == 2 }, "no server span in \(trace)")
        #expect(request.parentSpanID == sampled.spanID)
        #expect(request.attributes["http.route"] == "/v1/activities/{activityId}/updates")
        let commit = try #require(trace.first { $0.name == "commit" })
        #expect(commit.parentSpanID == request.spanID)
        #expect(commit.attributes["db.system.name"] == "postgresql")
        #expect(commit.attributes["db.namespace"] == ConnectionString.database(in: database))
        #expect(Int(commit.attributes["liveline.batch.size"] ?? "") ?? 0 >= 1)
        #expect(commit.attributes["liveline.outcome"] == "accepted")
        let push = try #require(trace.first { $0.name == "push update" })
        #expect(push.parentSpanID == commit.spanID)
        #expect(push.attributes["liveline.push.attempt"] == "1")
        #expect(push.attributes["apns.status"] == "200")
        #expect(push.attributes["apns.id"]?.count == 36)
        let answer = try #require(trace.first { $0.name == "APNs answer" })
        #expect(answer.parentSpanID == push.spanID && answer.kind == 3)

        // An unsampled update: no span of its trace, and nothing kept with its event.
        let unsampled = CallerSpan(sampled: false)
        try await call(.post, "/v1/activities/match/updates", #"{"contentState":{"step":2}}"#, as: unsampled)
        for _ in 0..<300 where apns.received(by: Self.token).count < 2 { try await Task.sleep(for: .milliseconds(50)) }
        #expect(apns.received(by: Self.token).count == 2, "the unsampled update's push did not go")
        // A sampled update whose first attempt APNs answers 500: the retry is a trace of its own,
        // linked to the request's commit.
        apns.fail(.status(500, reason: "InternalServerError"), times: 1, deviceToken: Self.token)
        let retried = CallerSpan(sampled: true)
        try await call(.post, "/v1/activities/match/updates", #"{"contentState":{"step":3}}"#, as: retried)
        let later = try await Self.waitFor(receiver, "the retried push, linked") { spans in
            spans.contains { span in span.name == "push update" && span.links.contains { $0.traceID == retried.traceID }
            }
        }
        #expect(!later.contains { $0.traceID == unsampled.traceID })
        let retriedCommit = try #require(later.first { $0.traceID == retried.traceID && $0.name == "commit" })
        let first = try #require(later.first { $0.traceID == retried.traceID && $0.name == "push update" })
        #expect(
            first.parentSpanID == retriedCommit.spanID && first.attributes["apns.status"] == "500" && first.status == 2
        )
        let retry = try #require(later.first { span in span.links.contains { $0.traceID == retried.traceID } })
        #expect(retry.parentSpanID.isEmpty && retry.traceID != retried.traceID)
        #expect(retry.links == [OTLPReceiver.Link(traceID: retried.traceID, spanID: retriedCommit.spanID)])
        #expect(retry.attributes["liveline.push.attempt"] == "2" && retry.attributes["apns.status"] == "200")

        // The log keeps trace contexts for the sampled requests' events only.
        let kept: [String] = try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            try await pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT t.traceparent FROM events e JOIN event_traces t USING (position)
                    WHERE e.activity_id = 'match' AND e.type = 'activity.updated' ORDER BY e.version
                    """
                ).map { try $0.decode("traceparent") }
            }
        }
        #expect(kept.map { $0.split(separator: "-")[1] } == [Substring(sampled.traceID), Substring(retried.traceID)])
        // The console links those events to their traces, with the configured template.
        let cookie = try #require(try await ServedApps.signInToConsole(port: port, key: Self.adminKey))
        let timeline = try await ServedApps.consolePage(
            port: port,
            "/console/apps/game/activities/match",
            cookie: cookie
        )
        for traced in [sampled, retried] {
            #expect(timeline.contains(#"href="http://jaeger.test/trace/\#(traced.traceID)""#))
        }
        #expect(!timeline.contains(unsampled.traceID))
        await receiver.close()
        try await apns.shutdown()
    }

    /// The spans received once `condition` holds, waiting up to 30 s.
    static func waitFor(
        _ receiver: OTLPReceiver,
        _ what: String,
        _ condition: ([OTLPReceiver.Span]) -> Bool
    ) async throws -> [OTLPReceiver.Span] {
        for _ in 0..<300 {
            let spans = receiver.received
            if condition(spans) { return spans }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("not within 30 s: \(what); received \(receiver.received.map(\.name))")
        return receiver.received
    }
}

import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import LivelineHTTP
import NIOCore
import Testing

/// One malformed request and the answer it must get.
struct BadInput: Sendable, CustomStringConvertible {
    let description: String
    var method: HTTPRequest.Method = .post
    var path = "/v1/activities"
    var body: [UInt8]?
    var contentType: String? = "application/json"
    var headers: HTTPFields = [:]
    var key: Key = .app
    let status: HTTPResponse.Status
    let code: String

    enum Key: Sendable { case app, admin }

    init(
        _ description: String,
        _ method: HTTPRequest.Method = .post,
        _ path: String = "/v1/activities",
        json: String? = nil,
        bytes: [UInt8]? = nil,
        contentType: String? = "application/json",
        headers: HTTPFields = [:],
        key: Key = .app,
        _ status: HTTPResponse.Status,
        _ code: String
    ) {
        self.description = description
        self.method = method
        self.path = path
        self.body = bytes ?? json.map { Array($0.utf8) }
        self.contentType = contentType
        self.headers = headers
        self.key = key
        self.status = status
        self.code = code
    }
}

@Suite("Bad input over real HTTP: a clear 4xx problem, never a 500, never a write")
struct BadInputTests {
    static let updates = "/v1/activities/a1/updates"
    static let end = "/v1/activities/a1/end"
    static let valid = #""activityType":"T","contentState":{}"#

    static let cases: [BadInput] = [
        // Syntax
        BadInput("truncated JSON", json: "{", .badRequest, "malformed_json"),
        BadInput("empty body", json: "", .badRequest, "invalid_request"),
        BadInput("only whitespace", json: " \n", .badRequest, "malformed_json"),
        BadInput("trailing garbage", json: "{\(valid)}garbage", .badRequest, "malformed_json"),
        BadInput("trailing comma", json: "{\(valid),}", .badRequest, "malformed_json"),
        BadInput("single quotes", json: "{'activityType':'T','contentState':{}}", .badRequest, "malformed_json"),
        BadInput("NaN literal", json: #"{"activityType":"T","contentState":{"x":NaN}}"#, .badRequest, "malformed_json"),
        BadInput("a comment", json: "{/* c */\(valid)}", .badRequest, "malformed_json"),
        BadInput(
            "U+0000 in a string, which PostgreSQL cannot store",
            json: #"{"activityType":"T","contentState":{"a":"x\u0000y"}}"#,
            .badRequest,
            "malformed_json"
        ),
        BadInput("unquoted key", json: #"{activityType:"T","contentState":{}}"#, .badRequest, "malformed_json"),
        BadInput(
            "a field given twice",
            json: #"{"activityType":"T","activityType":"U","contentState":{}}"#,
            .badRequest,
            "malformed_json"
        ),
        BadInput(
            "a content key given twice, once with an escape",
            json: #"{"activityType":"T","contentState":{"a":1,"\u0061":2}}"#,
            .badRequest,
            "malformed_json"
        ),
        BadInput(
            "content keys that differ only in Unicode normalization",
            json: "{\"activityType\":\"T\",\"contentState\":{\"\u{E9}\":1,\"e\u{301}\":2}}",
            .badRequest,
            "malformed_json"
        ),
        BadInput(
            "invalid UTF-8 in a string",
            bytes: Array(#"{"activityType":""#.utf8) + [0xFF, 0xFE] + Array(#"","contentState":{}}"#.utf8),
            .badRequest,
            "malformed_json"
        ),
        BadInput("a JSON array for the body", json: "[]", .badRequest, "invalid_request"),
        BadInput("a JSON string for the body", json: #""hello""#, .badRequest, "invalid_request"),
        BadInput("null for the body", json: "null", .badRequest, "invalid_request"),
        // Types
        BadInput(
            "activityType a number",
            json: #"{"activityType":5,"contentState":{}}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "contentState a string",
            json: #"{"activityType":"T","contentState":"x"}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "contentState an array",
            json: #"{"activityType":"T","contentState":[]}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "contentState null",
            json: #"{"activityType":"T","contentState":null}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput("attributes a number", json: #"{\#(valid),"attributes":3}"#, .badRequest, "invalid_request"),
        BadInput("staleDate a number", json: #"{\#(valid),"staleDate":12345}"#, .badRequest, "invalid_request"),
        BadInput("staleDate not a date", json: #"{\#(valid),"staleDate":"tomorrow"}"#, .badRequest, "invalid_request"),
        BadInput(
            "startDate with month 13",
            json: #"{\#(valid),"startDate":"2026-13-01T00:00:00Z"}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "staleDate without a zone",
            json: #"{\#(valid),"staleDate":"2026-11-21T10:00:00"}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput("relevanceScore negative", json: #"{\#(valid),"relevanceScore":-1}"#, .badRequest, "invalid_request"),
        BadInput(
            "relevanceScore a string",
            json: #"{\#(valid),"relevanceScore":"high"}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "relevanceScore beyond a double",
            json: #"{\#(valid),"relevanceScore":1e400}"#,
            .badRequest,
            "malformed_json"
        ),
        BadInput(
            "a huge number in contentState",
            json: #"{"activityType":"T","contentState":{"n":1e999}}"#,
            .badRequest,
            "malformed_json"
        ),
        BadInput("pushType unknown", json: #"{\#(valid),"pushType":"carrier"}"#, .badRequest, "invalid_request"),
        BadInput("style unknown", json: #"{\#(valid),"style":"loud"}"#, .badRequest, "invalid_request"),
        BadInput("deviceId with spaces", json: #"{\#(valid),"deviceId":"my phone"}"#, .badRequest, "invalid_request"),
        BadInput("activityId empty", json: #"{\#(valid),"activityId":""}"#, .badRequest, "invalid_request"),
        BadInput(
            "activityId of 129 characters",
            json: #"{\#(valid),"activityId":"\#(String(repeating: "a", count: 129))"}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "activityType of 200 characters",
            json: #"{"activityType":"\#(String(repeating: "t", count: 200))","contentState":{}}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "priority 7",
            .post,
            updates,
            json: #"{"contentState":{},"priority":7}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "priority as a string",
            .post,
            updates,
            json: #"{"contentState":{},"priority":"10"}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "alert a string",
            .post,
            updates,
            json: #"{"contentState":{},"alert":"hi"}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "timestamp a boolean",
            .post,
            updates,
            json: #"{"contentState":{},"timestamp":true}"#,
            .badRequest,
            "invalid_request"
        ),
        // Missing and unknown fields
        BadInput("contentState missing", json: #"{"activityType":"T"}"#, .badRequest, "invalid_request"),
        BadInput("activityType missing", json: #"{"contentState":{}}"#, .badRequest, "invalid_request"),
        BadInput("an unknown field", json: #"{\#(valid),"colour":"red"}"#, .badRequest, "invalid_request"),
        BadInput("a misspelt field", .post, updates, json: #"{"contentstate":{}}"#, .badRequest, "invalid_request"),
        BadInput(
            "alert without a body",
            .post,
            updates,
            json: #"{"contentState":{},"alert":{"title":"t"}}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "an unknown field in alert",
            .post,
            updates,
            json: #"{"contentState":{},"alert":{"title":"t","body":"b","colour":1}}"#,
            .badRequest,
            "invalid_request"
        ),
        // Rules the schema types cannot say
        BadInput(
            "dismissal policy unknown",
            .post,
            end,
            json: #"{"dismissal":{"policy":"later"}}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "dismissal after without a date",
            .post,
            end,
            json: #"{"dismissal":{"policy":"after"}}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "dismissal immediate with a date",
            .post,
            end,
            json: #"{"dismissal":{"policy":"immediate","date":"2026-11-21T10:00:00Z"}}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "end staleDate without contentState",
            .post,
            end,
            json: #"{"staleDate":"2026-11-21T10:00:00Z"}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "pushToken empty",
            .put,
            "/v1/activities/a1/push-token",
            json: #"{"pushToken":""}"#,
            .badRequest,
            "invalid_request"
        ),
        // Limits and nesting
        BadInput(
            "nesting 10 000 deep",
            json:
                #"{"activityType":"T","contentState":{"x":\#(String(repeating: "[", count: 10_000))\#(String(repeating: "]", count: 10_000))}}"#,
            .badRequest,
            "malformed_json"
        ),
        BadInput(
            "a body over 64 KiB",
            json: #"{"activityType":"T","contentState":{"x":"\#(String(repeating: "x", count: 70_000))"}}"#,
            .contentTooLarge,
            "request_too_large"
        ),
        // Content types
        BadInput(
            "text/plain",
            json: "{\(valid)}",
            contentType: "text/plain",
            .unsupportedMediaType,
            "unsupported_media_type"
        ),
        BadInput(
            "application/xml",
            json: "<a/>",
            contentType: "application/xml",
            .unsupportedMediaType,
            "unsupported_media_type"
        ),
        BadInput(
            "form encoding",
            json: "activityType=T",
            contentType: "application/x-www-form-urlencoded",
            .unsupportedMediaType,
            "unsupported_media_type"
        ),
        BadInput(
            "an Accept header without JSON",
            .get,
            "/v1/activities",
            headers: [.accept: "text/html"],
            .notAcceptable,
            "not_acceptable"
        ),
        // Parameters and headers
        BadInput("limit 0", .get, "/v1/activities?limit=0", .badRequest, "invalid_request"),
        BadInput("limit not a number", .get, "/v1/activities?limit=ten", .badRequest, "invalid_request"),
        BadInput("limit too large", .get, "/v1/activities?limit=100000", .badRequest, "invalid_request"),
        BadInput(
            "limit beyond 64 bits",
            .get,
            "/v1/events?limit=99999999999999999999999",
            .badRequest,
            "invalid_request"
        ),
        BadInput("state unknown", .get, "/v1/activities?state=gone", .badRequest, "invalid_request"),
        BadInput("cursor forged", .get, "/v1/activities?cursor=bm90LWEtY3Vyc29y", .badRequest, "invalid_request"),
        BadInput("after negative", .get, "/v1/events?after=-1", .badRequest, "invalid_request"),
        BadInput("after not a number", .get, "/v1/events?after=latest", .badRequest, "invalid_request"),
        BadInput(
            "Last-Event-ID not a position",
            .get,
            "/v1/events/stream",
            headers: [HTTPField.Name("Last-Event-ID")!: "abc"],
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "If-Match not an ETag",
            .post,
            updates,
            json: #"{"contentState":{}}"#,
            headers: [.ifMatch: "version-one"],
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "Idempotency-Key of 300 characters",
            .post,
            updates,
            json: #"{"contentState":{}}"#,
            headers: [HTTPField.Name("Idempotency-Key")!: String(repeating: "k", count: 300)],
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "activity id with a space in the path",
            .get,
            "/v1/activities/bad%20id",
            .badRequest,
            "invalid_request"
        ),
        BadInput("an unknown route", .get, "/v1/nothing", .notFound, "not_found"),
        BadInput(
            "a method the route does not have",
            .delete,
            "/v1/activities",
            .methodNotAllowed,
            "method_not_allowed"
        ),
        BadInput("TRACE on /healthz", .trace, "/healthz", .methodNotAllowed, "method_not_allowed"),
        BadInput(
            "a method a templated path does not take",
            .delete,
            "/v1/activities/a1/updates",
            .methodNotAllowed,
            "method_not_allowed"
        ),
        // What the document states and the server holds to
        BadInput(
            "null for an optional field",
            .post,
            updates,
            json: #"{"contentState":{},"staleDate":null}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "null inside a typed object",
            .post,
            updates,
            json: #"{"contentState":{},"alert":{"title":"t","body":"b","sound":null}}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "null for frequentUpdates",
            .patch,
            "/v1/admin/apps/nobody",
            json: #"{"frequentUpdates":null}"#,
            key: .admin,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "If-Match of 19 digits, past what the pattern allows",
            .post,
            updates,
            json: #"{"contentState":{}}"#,
            headers: [.ifMatch: #""1234567890123456789""#],
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "If-Match with a sign",
            .post,
            updates,
            json: #"{"contentState":{}}"#,
            headers: [.ifMatch: "+1"],
            .badRequest,
            "invalid_request"
        ),
        BadInput("an empty cursor", .get, "/v1/activities?cursor=", .badRequest, "invalid_request"),
        BadInput(
            "a push token with a space",
            .put,
            "/v1/activities/a1/push-token",
            json: #"{"pushToken":"ab cd"}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "activityType of 129 Unicode scalars that make fewer characters",
            json: #"{"activityType":""# + String(repeating: #"e\u0301"#, count: 64) + #"x","contentState":{}}"#,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "a bundle id with a space",
            .post,
            "/v1/admin/apps",
            json: #"{"appId":"spaced","bundleId":"com.example app"}"#,
            key: .admin,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "an APNs key that is not PEM",
            .put,
            "/v1/admin/apps/nobody/apns",
            json: #"{"teamId":"ABCDE12345","keyId":"KEY1234567","environment":"sandbox","privateKey":"not a key"}"#,
            key: .admin,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "an APNs key in PEM that is not a P-256 key",
            .put,
            "/v1/admin/apps/nobody/apns",
            json: #"""
                {"teamId":"ABCDE12345","keyId":"KEY1234567","environment":"sandbox",
                 "privateKey":"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"}
                """#,
            key: .admin,
            .unprocessableContent,
            "invalid_apns_key"
        ),
        BadInput(
            "globalMaxOpen negative",
            .put,
            "/v1/admin/limits",
            json: #"{"globalMaxOpen":-5}"#,
            key: .admin,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "globalMaxOpen beyond 32 bits",
            .put,
            "/v1/admin/limits",
            json: #"{"globalMaxOpen":99999999999}"#,
            key: .admin,
            .badRequest,
            "invalid_request"
        ),
        BadInput(
            "an app id with a slash",
            .post,
            "/v1/admin/apps",
            json: #"{"appId":"a/b","bundleId":"x"}"#,
            key: .admin,
            .badRequest,
            "invalid_request"
        ),
    ]

    @Test("The table has at least 40 cases, each distinct")
    func tableSize() {
        #expect(Self.cases.count >= 40)
        #expect(Set(Self.cases.map(\.description)).count == Self.cases.count)
    }

    @Test("A path the API has, asked with a method it does not take: 405 with Allow naming its methods")
    func methodNotAllowed() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let cases: [(HTTPRequest.Method, String, String)] = [
                (HTTPRequest.Method.delete, "/v1/activities", "GET, POST"),
                (.post, "/v1/admin/apps/some-app/apns", "GET, PUT, DELETE"),
                (.trace, "/metrics", "GET"),
                (.post, "/v1/activities/any-id", "GET"),
            ]
            for (method, path, allowed) in cases {
                let response = try await api.send(method, path, key: app.key.key)
                #expect(response.status == .methodNotAllowed, "\(method) \(path)")
                #expect(response.headers[.allow] == allowed, "\(method) \(path)")
                #expect(try problem(response).detail.hasSuffix("it takes \(allowed)."))
            }
        }
    }

    @Test("null is data inside free-form JSON (attributes, contentState), and refused as any field's value")
    func nullInFreeFormJSON() async throws {
        // StrictJSONBodies lets null through under the members the document types JSONObject, by
        // name: a new one in the document must be named there too.
        let document = try String(
            contentsOf: URL(filePath: #filePath).deletingLastPathComponent().appending(path: "openapi.yaml"),
            encoding: .utf8
        )
        let lines = document.split(separator: "\n")
        let freeForm = Set(
            zip(lines, lines.dropFirst()).compactMap { line, next in
                next.hasSuffix("$ref: '#/components/schemas/JSONObject'") && line.hasSuffix(":")
                    ? line.trimmingCharacters(in: .whitespaces).dropLast() : nil
            }
        )
        #expect(freeForm == ["attributes", "contentState", "data", "details"])
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let created = try await api.send(
                .post,
                "/v1/activities",
                key: app.key.key,
                body: Array(
                    #"{"activityId":"n","activityType":"T","attributes":{"a":null},"contentState":{"b":[null,{"c":null}]}}"#
                        .utf8
                )
            )
            #expect(created.status == .created)
            let activity = try await app.client.getActivity(path: .init(activityId: "n")).ok.body.json
            #expect(activity.contentState == JSONObject(["b": .array([.null, .object(["c": .null])])]))

            // A refused null is named by its JSON Pointer, keys escaped (RFC 6901).
            let nested = try await api.send(
                .post,
                "/v1/activities/n/updates",
                key: app.key.key,
                body: Array(#"{"contentState":{},"alert":{"title":"t","body":"b","sound":null}}"#.utf8)
            )
            #expect(nested.status == .badRequest)
            #expect(try problem(nested).detail("field") == .string("/alert/sound"))
            let escaped = try await api.send(
                .put,
                "/v1/admin/limits",
                key: APIFixture.adminKey,
                body: Array(#"{"a~/b":{"c":{"d":null}}}"#.utf8)
            )
            #expect(try problem(escaped).detail("field") == .string("/a~0~1b/c/d"))
        }
    }

    @Test("the OpenAPI runtime's own refusals are answered by the status they call for, with Liveline's words")
    func runtimeRefusals() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            func detail(_ input: BadInput) async throws -> String {
                let response = try await api.send(
                    input.method,
                    input.path,
                    key: app.key.key,
                    headers: input.headers,
                    body: input.body,
                    contentType: input.contentType
                )
                #expect(response.status == input.status, "\(input)")
                let body = try problem(response)
                #expect(body.code == input.code, "\(input)")
                return body.detail
            }
            let text = BadInput(
                "text",
                json: "{}",
                contentType: "text/plain",
                .unsupportedMediaType,
                "unsupported_media_type"
            )
            #expect(try await detail(text).hasSuffix("got text/plain."))
            let html = BadInput(
                "html",
                .get,
                headers: [.accept: "text/html"],
                .notAcceptable,
                "not_acceptable"
            )
            #expect(try await detail(html).hasPrefix("Accept: text/html allows none"))
        }
    }

    @Test("Each bad request gets its 4xx and code in a problem body; the server stays healthy; nothing is written")
    func badRequests() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            _ = try await app.client.requestActivity(
                body: .json(.init(activityId: activityID("a1"), activityType: "T", contentState: .empty))
            ).created
            let stream = StreamID(app: app.id, activity: activityID("a1"))
            let eventsBefore = try await api.store.events(of: stream)

            for input in Self.cases {
                let response = try await api.send(
                    input.method,
                    input.path,
                    key: input.key == .admin ? APIFixture.adminKey : app.key.key,
                    headers: input.headers,
                    body: input.body,
                    contentType: input.contentType
                )
                #expect(response.status == input.status, "\(input)")
                guard let body = try? problem(response) else {
                    Issue.record("\(input): no problem body but \(String(buffer: response.body))")
                    continue
                }
                #expect(body.code == input.code, "\(input): \(body.detail)")
                #expect(body.status == Int(input.status.code), "\(input)")
                #expect(!body.detail.isEmpty, "\(input)")
            }

            let health = try await api.client(key: nil).getHealth().ok.body.json.status
            #expect(health == "ok")
            let eventsAfter = try await api.store.events(of: stream)
            #expect(eventsAfter == eventsBefore)
            let activities = try await api.store.activities(of: app.id, limit: 100).activities
            #expect(activities.map(\.stream) == [stream])
            let rejections = try await api.store.rejections(of: app.id, limit: 100)
            #expect(rejections.isEmpty)
            let activity = try await app.client.getActivity(path: .init(activityId: "a1")).ok.body.json
            #expect(activity.version == 1)
            let limits = try await api.store.openCounts(of: app.id)
            #expect(limits.app == 1)
        }
    }
}

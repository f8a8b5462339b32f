import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@Suite("Keys, isolation between apps, and the admin API over real HTTP")
struct AccessTests {
    @Test("No key, a malformed header, or an unknown key is 401 with WWW-Authenticate")
    func unauthenticated() async throws {
        try await APIFixture.run { api in
            for authorization in [nil, "Basic abc", "Bearer", "Bearer ll_not_a_key"] {
                var headers: HTTPFields = [:]
                if let authorization { headers[.authorization] = authorization }
                let response = try await api.send(.get, "/v1/activities", key: nil, headers: headers)
                #expect(response.status == .unauthorized)
                #expect(response.headers[.wwwAuthenticate] == "Bearer realm=\"liveline\"")
                #expect(try problem(response).code == "unauthorized")
            }
        }
    }

    @Test("The scheme is matched in any case, and blanks around the key are ignored, as HTTP says")
    func schemeAndBlanks() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            for authorization in ["bearer \(app.key.key)", "BEARER \(app.key.key)", "Bearer \t \(app.key.key)"] {
                let response = try await api.send(
                    .post,
                    "/v1/activities",
                    key: nil,
                    headers: [.authorization: authorization, .contentType: "Application/JSON; charset=utf-8"],
                    body: Array(#"{"activityType": "T", "contentState": {}}"#.utf8)
                )
                #expect(response.status == .created, "\(authorization)")
            }
            let wrongType = try await api.send(
                .post,
                "/v1/activities",
                key: app.key.key,
                headers: [.contentType: "text/plain; x=application/json"],
                body: Array(#"{"activityType": "T", "contentState": {}}"#.utf8)
            )
            #expect(wrongType.status == .unsupportedMediaType)
            // A structured "+json" type is JSON too: the strict parser reads it first.
            let suffixed = try await api.send(
                .post,
                "/v1/activities",
                key: app.key.key,
                headers: [.contentType: "application/vnd.example+JSON"],
                body: Array(#"{"activityType": "T",}"#.utf8)
            )
            #expect(try problem(suffixed).code == "malformed_json")
        }
    }

    @Test("The admin key does not reach activities, and an app's key does not reach the admin API (403)")
    func wrongKind() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let onActivities = try await api.admin.listActivities().forbidden.body.applicationProblemJson
            #expect(onActivities.code == "forbidden")
            let onAdmin = try await app.client.listApps().forbidden.body.applicationProblemJson
            #expect(onAdmin.code == "forbidden")
            // Every route of the admin API, whatever its method: an app's key is refused before
            // any handler runs.
            let adminRoutes: [(HTTPRequest.Method, String)] = [
                (.post, "/v1/admin/apps"), (.get, "/v1/admin/apps"), (.patch, "/v1/admin/apps/\(app.id)"),
                (.post, "/v1/admin/apps/\(app.id)/keys"),
                (.delete, "/v1/admin/apps/\(app.id)/keys/\(app.key.keyId)"), (.put, "/v1/admin/limits"),
                (.put, "/v1/admin/apps/\(app.id)/apns"), (.get, "/v1/admin/apps/\(app.id)/apns"),
                (.delete, "/v1/admin/apps/\(app.id)/apns"),
            ]
            for (method, path) in adminRoutes {
                let response = try await api.send(
                    method,
                    path,
                    key: app.key.key,
                    body: method == .get ? nil : Array("{}".utf8)
                )
                #expect(response.status == .forbidden, "\(method) \(path)")
            }
        }
    }

    @Test("One app never sees or changes another's activities: 404, as if they did not exist")
    func isolation() async throws {
        try await APIFixture.run { api in
            let owner = try await api.makeApp()
            let other = try await api.makeApp()
            _ = try await owner.client.requestActivity(
                body: .json(.init(activityId: activityID("mine"), activityType: "T", contentState: .empty))
            ).created
            let path = "mine"
            let hidden = try await other.client.getActivity(path: .init(activityId: path)).notFound
            #expect(try hidden.body.applicationProblemJson.code == "activity_not_found")
            _ = try await other.client.updateActivity(
                path: .init(activityId: path),
                body: .json(.init(contentState: .empty))
            ).notFound
            _ = try await other.client.endActivity(path: .init(activityId: path), body: .json(.init())).notFound
            _ = try await other.client.reportDismissal(path: .init(activityId: path)).notFound
            _ = try await other.client.listActivityEvents(path: .init(activityId: path)).notFound
            let listed = try await other.client.listActivities().ok.body.json.activities
            #expect(listed.isEmpty)
            let feed = try await other.client.readEventFeed().ok.body.json.events
            #expect(feed.isEmpty)
            // The same id is free in the other app's namespace.
            _ = try await other.client.requestActivity(
                body: .json(.init(activityId: activityID("mine"), activityType: "T", contentState: .empty))
            ).created
            let version = try await owner.client.getActivity(path: .init(activityId: path)).ok.body.json.version
            #expect(version == 1)
        }
    }

    @Test("Keys rotate without downtime: a second key works at once, the revoked one stops at once")
    func rotation() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let second = try await api.admin.issueKey(path: .init(appId: app.id.rawValue)).created.body.json
            #expect(second.key != app.key.key)
            _ = try await app.client.listActivities().ok
            _ = try await api.client(key: second.key).listActivities().ok

            _ = try await api.admin.revokeKey(path: .init(appId: app.id.rawValue, keyId: app.key.keyId)).noContent
            _ = try await app.client.listActivities().unauthorized
            _ = try await api.client(key: second.key).listActivities().ok
            // Clients that always send a JSON content type may send it without a body.
            let issued = try await api.send(
                .post,
                "/v1/admin/apps/\(app.id)/keys",
                key: APIFixture.adminKey,
                headers: [.contentType: "application/json"]
            )
            #expect(issued.status == .created)
            // Revoking again is fine; an unknown key id is 404.
            _ = try await api.admin.revokeKey(path: .init(appId: app.id.rawValue, keyId: app.key.keyId)).noContent
            let unknown = try await api.admin.revokeKey(
                path: .init(appId: app.id.rawValue, keyId: UUID().uuidString)
            ).notFound.body.applicationProblemJson
            #expect(unknown.code == "key_not_found")
        }
    }

    @Test("Admin: create, list and change apps; a taken id is 409, an unknown one 404")
    func apps() async throws {
        try await APIFixture.run { api in
            let created = try await api.admin.createApp(
                body: .json(.init(appId: AppID(rawValue: "com.example.one")!, bundleId: "com.example.one"))
            ).created.body.json
            #expect(created.maxOpen == 5)
            #expect(created.priorityBudgetPerHour == 10)
            #expect(created.maxOpenPerDevice == nil)
            #expect(created.openActivities == 0)

            let taken = try await api.admin.createApp(
                body: .json(.init(appId: AppID(rawValue: "com.example.one")!, bundleId: "x"))
            ).conflict.body.applicationProblemJson
            #expect(taken.code == "app_exists")

            let changed = try await api.admin.updateApp(
                path: .init(appId: "com.example.one"),
                body: .json(.init(maxOpen: 50, maxOpenPerDevice: 2, frequentUpdates: true))
            ).ok.body.json
            #expect(changed.maxOpen == 50)
            #expect(changed.maxOpenPerDevice == 2)
            #expect(changed.frequentUpdates)
            #expect(changed.bundleId == "com.example.one")
            let uncapped = try await api.admin.updateApp(
                path: .init(appId: "com.example.one"),
                body: .json(.init(maxOpenPerDevice: 0))
            ).ok.body.json
            #expect(uncapped.maxOpenPerDevice == nil)

            let apps = try await api.admin.listApps().ok.body.json.apps
            #expect(apps.map(\.appId.rawValue) == ["com.example.one"])

            let missing = try await api.admin.updateApp(path: .init(appId: "nope"), body: .json(.init(maxOpen: 1)))
                .notFound.body.applicationProblemJson
            #expect(missing.code == "app_not_found")
            let noKey = try await api.admin.issueKey(path: .init(appId: "nope")).notFound.body.applicationProblemJson
            #expect(noKey.code == "app_not_found")
            let negative = try await api.admin.updateApp(
                path: .init(appId: "com.example.one"),
                body: .json(.init(maxOpen: -1))
            ).badRequest.body.applicationProblemJson
            #expect(negative.detail("field") == .string("/maxOpen"))
        }
    }
}

@Suite("Idempotency keys and conditional requests over real HTTP")
struct IdempotencyTests {
    @Test("A retry with the same key and body gets the first response and appends nothing")
    func retry() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let request = Components.Schemas.ActivityRequest(activityType: "T", contentState: .empty)
            let first = try await app.client.requestActivity(
                headers: .init(idempotencyKey: "req-1"),
                body: .json(request)
            ).created
            api.clock.advance(by: .seconds(5))
            let second = try await app.client.requestActivity(
                headers: .init(idempotencyKey: "req-1"),
                body: .json(request)
            ).created
            #expect(first == second)

            let id = try first.body.json.activityId.rawValue
            let update = Components.Schemas.ActivityUpdate(contentState: JSONObject(["n": .number(1)]))
            let updated = try await app.client.updateActivity(
                path: .init(activityId: id),
                headers: .init(idempotencyKey: "upd-1"),
                body: .json(update)
            ).ok
            let again = try await app.client.updateActivity(
                path: .init(activityId: id),
                headers: .init(idempotencyKey: "upd-1"),
                body: .json(update)
            ).ok
            #expect(updated == again)
            let events = try await app.client.listActivityEvents(path: .init(activityId: id)).ok.body.json.events
            #expect(events.count == 2)
        }
    }

    @Test("A retried refusal is refused the same way; the same key with another body is 422")
    func reuse() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp(maxOpen: 0)
            let request = Components.Schemas.ActivityRequest(activityType: "T", contentState: .empty)
            for _ in 0..<2 {
                let refused = try await app.client.requestActivity(
                    headers: .init(idempotencyKey: "k"),
                    body: .json(request)
                ).conflict.body.applicationProblemJson
                #expect(refused.code == "target_maximum_exceeded")
            }
            let reused = try await app.client.requestActivity(
                headers: .init(idempotencyKey: "k"),
                body: .json(.init(activityType: "Other", contentState: .empty))
            ).unprocessableContent.body.applicationProblemJson
            #expect(reused.code == "idempotency_key_reused")
            let recorded = try await api.store.rejections(of: app.id, limit: 10)
            #expect(recorded.count == 1)
        }
    }

    @Test("Racing updates without If-Match all succeed, with contiguous versions, whatever their clock readings")
    func racingUpdates() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            _ = try await app.client.requestActivity(
                body: .json(.init(activityId: activityID("hot"), activityType: "T", contentState: .empty))
            ).created
            // Each update on a connection of its own, so that they really race; meanwhile the clock
            // steps back, as clock readings of racing requests may be in any order.
            let port = try #require(api.raw.port)
            let key = app.key.key
            let clock = api.clock
            let stepping = Task {
                while !Task.isCancelled {
                    clock.advance(by: .milliseconds(-1))
                    try? await Task.sleep(for: .milliseconds(1))
                }
            }
            defer { stepping.cancel() }
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        try await TestClient.withClient(host: "127.0.0.1", port: port) { connection in
                            try await connection.post(
                                "/v1/activities/hot/updates",
                                headers: [.authorization: "Bearer \(key)", .contentType: "application/json"],
                                body: ByteBuffer(string: #"{"contentState":{"n":\#(index)},"priority":5}"#)
                            ).head.status
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: .ok, count: 40))
            let events = try await app.client.listActivityEvents(path: .init(activityId: "hot")).ok.body.json.events
            #expect(events.map(\.version) == Array(1...41))
        }
    }

    @Test("If-Match makes a command conditional: the current ETag applies, an old one is 412 with both versions")
    func conditional() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            _ = try await app.client.requestActivity(
                body: .json(.init(activityId: activityID("c1"), activityType: "T", contentState: .empty))
            ).created
            let path = Operations.UpdateActivity.Input.Path(activityId: "c1")
            let ok = try await app.client.updateActivity(
                path: path,
                headers: .init(ifMatch: "\"1\""),
                body: .json(.init(contentState: .empty))
            ).ok
            #expect(ok.headers.eTag == "\"2\"")
            let stale = try await app.client.updateActivity(
                path: path,
                headers: .init(ifMatch: "\"1\""),
                body: .json(.init(contentState: .empty))
            ).preconditionFailed.body.applicationProblemJson
            #expect(stale.code == "version_mismatch")
            #expect(stale.detail("expected") == .number(1))
            #expect(stale.detail("actual") == .number(2))
            _ = try await app.client.endActivity(
                path: .init(activityId: "c1"),
                headers: .init(ifMatch: "*"),
                body: .json(.init())
            ).ok
        }
    }
}

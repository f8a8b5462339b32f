import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import LivelineHTTP
import NIOCore
import Testing

@Suite("The push-to-start token routes: register, rotate, read with its changes, remove")
struct PushToStartTokenAPITests {
    static func path(
        _ device: String = "phone-1",
        _ type: String = "Game.Attributes"
    )
        -> Operations.RegisterPushToStartToken.Input.Path
    {
        .init(deviceId: device, activityType: type)
    }

    @Test("PUT registers and rotates, GET shows the token with its changes, DELETE removes it")
    func lifecycle() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let none = try await api.send(
                .get,
                "/v1/devices/phone-1/push-to-start-tokens/Game.Attributes",
                key: app.key.key
            )
            #expect(none.status == .notFound)
            #expect(try problem(none).code == "push_to_start_token_not_found")

            let first = try await app.client.registerPushToStartToken(
                path: Self.path(),
                body: .json(.init(pushToStartToken: "aa01"))
            ).ok.body.json
            #expect(first.deviceId.rawValue == "phone-1" && first.activityType == "Game.Attributes")
            #expect(first.pushToStartToken == "aa01" && first.registeredAt != nil)
            _ = try await app.client.registerPushToStartToken(
                path: Self.path(),
                body: .json(.init(pushToStartToken: "aa01"))
            ).ok
            _ = try await app.client.registerPushToStartToken(
                path: Self.path(),
                body: .json(.init(pushToStartToken: "bb02"))
            ).ok

            let read = try await app.client.getPushToStartToken(
                path: .init(deviceId: "phone-1", activityType: "Game.Attributes")
            )
            .ok.body.json
            #expect(read.pushToStartToken == "bb02")
            #expect(read.changes.map(\.change) == [.registered, .registered])
            #expect(read.changes.map(\.pushToStartToken) == ["aa01", "bb02"])

            _ = try await app.client.removePushToStartToken(
                path: .init(deviceId: "phone-1", activityType: "Game.Attributes")
            )
            .noContent
            let again = try await api.send(
                .delete,
                "/v1/devices/phone-1/push-to-start-tokens/Game.Attributes",
                key: app.key.key
            )
            #expect(again.status == .notFound)
            let removed = try await app.client.getPushToStartToken(
                path: .init(deviceId: "phone-1", activityType: "Game.Attributes")
            )
            .ok.body.json
            #expect(removed.pushToStartToken == nil && removed.registeredAt == nil)
            #expect(removed.changes.map(\.change) == [.registered, .registered, .removed])
        }
    }

    @Test("GET counts the current token's unconfirmed starts in a row, and says when they make it suspect")
    func suspect() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            _ = try await app.client.registerPushToStartToken(
                path: Self.path(),
                body: .json(.init(pushToStartToken: "aa01"))
            ).ok
            let fresh = try await app.client.getPushToStartToken(
                path: .init(deviceId: "phone-1", activityType: "Game.Attributes")
            )
            .ok.body.json
            #expect(fresh.unconfirmedStartsInARow == 0 && fresh.suspect == false)

            // Three remote starts APNs accepted, whose devices never reported their activities' tokens.
            let policy = LifecyclePolicy.standard
            var time = Timestamp.now()
            for index in 1...policy.suspectAfterUnconfirmedStarts {
                let stream = StreamID(app: app.id, activity: ActivityID(rawValue: "start-\(index)")!)
                let request = Command.Request(
                    activityType: "Game.Attributes",
                    content: ActivityContent(contentState: .empty),
                    deviceID: DeviceID(rawValue: "phone-1"),
                    remoteStart: RemoteStart(pushToStartToken: "aa01", alert: Alert(title: "t", body: "b"))
                )
                let result = try await api.store.execute(.request(request), on: stream, at: time)
                guard case .accepted(_, let events) = result.outcome, let position = events.first?.position else {
                    Issue.record("the remote start was refused: \(result.outcome)")
                    return
                }
                let start = AcceptedStart(stream: stream, position: position, token: "aa01", acceptedAt: time)
                try await api.store.recordDeliveries(
                    DeliveryWrites(acceptedStarts: [start]),
                    cursors: [:],
                    worker: "test"
                )
                time = time + policy.startConfirmationWindow
                #expect(try await api.store.settleDueStarts(at: time, limit: 10).verdicts == [.unconfirmed])
            }
            let suspect = try await app.client.getPushToStartToken(
                path: .init(deviceId: "phone-1", activityType: "Game.Attributes")
            )
            .ok.body.json
            #expect(suspect.unconfirmedStartsInARow == policy.suspectAfterUnconfirmedStarts && suspect.suspect == true)

            // A new token is not suspect; after a removal there is no current token to judge.
            _ = try await app.client.registerPushToStartToken(
                path: Self.path(),
                body: .json(.init(pushToStartToken: "bb02"))
            ).ok
            let rotated = try await app.client.getPushToStartToken(
                path: .init(deviceId: "phone-1", activityType: "Game.Attributes")
            )
            .ok.body.json
            #expect(rotated.unconfirmedStartsInARow == 0 && rotated.suspect == false)
            _ = try await app.client.removePushToStartToken(
                path: .init(deviceId: "phone-1", activityType: "Game.Attributes")
            )
            .noContent
            let removed = try await app.client.getPushToStartToken(
                path: .init(deviceId: "phone-1", activityType: "Game.Attributes")
            )
            .ok.body.json
            #expect(removed.unconfirmedStartsInARow == nil && removed.suspect == nil)
        }
    }

    @Test("an activity type is read from its percent-encoded path segment")
    func percentEncodedType() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let put = try await api.send(
                .put,
                "/v1/devices/phone-1/push-to-start-tokens/Score%20Board",
                key: app.key.key,
                body: Array(#"{"pushToStartToken":"aa01"}"#.utf8)
            )
            #expect(put.status == .ok)
            let read = try await app.client.getPushToStartToken(
                path: .init(deviceId: "phone-1", activityType: "Score Board")
            )
            .ok.body.json
            #expect(read.activityType == "Score Board" && read.pushToStartToken == "aa01")
        }
    }

    @Test(
        "a bad token, device id or body is a 400 naming it, and nothing is registered",
        arguments: [
            ("/v1/devices/phone-1/push-to-start-tokens/T", #"{"pushToStartToken":"a b"}"#, "/pushToStartToken"),
            ("/v1/devices/phone-1/push-to-start-tokens/T", #"{"pushToStartToken":""}"#, "/pushToStartToken"),
            ("/v1/devices/phone%201/push-to-start-tokens/T", #"{"pushToStartToken":"aa01"}"#, "deviceId"),
            ("/v1/devices/phone-1/push-to-start-tokens/T", #"{"token":"aa01"}"#, nil),
        ]
    )
    func badInput(uri: String, body: String, field: String?) async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let response = try await api.send(.put, uri, key: app.key.key, body: Array(body.utf8))
            #expect(response.status == .badRequest)
            if let field { #expect(try problem(response).detail("field") == .string(field)) }
            let read = try await api.send(.get, "/v1/devices/phone-1/push-to-start-tokens/T", key: app.key.key)
            #expect(read.status == .notFound)
        }
    }

    @Test("an app never sees another app's tokens; the admin key is refused")
    func isolation() async throws {
        try await APIFixture.run { api in
            let owner = try await api.makeApp()
            let other = try await api.makeApp()
            _ = try await owner.client.registerPushToStartToken(
                path: Self.path(),
                body: .json(.init(pushToStartToken: "aa01"))
            ).ok
            let uri = "/v1/devices/phone-1/push-to-start-tokens/Game.Attributes"
            #expect(try await api.send(.get, uri, key: other.key.key).status == .notFound)
            #expect(try await api.send(.delete, uri, key: other.key.key).status == .notFound)
            #expect(try await api.send(.get, uri, key: APIFixture.adminKey).status == .forbidden)
        }
    }
}

@Suite("Remote start through the API: remoteStart, to a device's push-to-start token")
struct RemoteStartAPITests {
    static func body(_ extra: String = "") -> [UInt8] {
        Array(
            #"{"activityId":"kickoff","activityType":"Match","contentState":{"score":"0-0"},"deviceId":"phone-1","remoteStart":{"alert":{"title":"Kick-off","body":"Lions v Bears"}}\#(extra)}"#
                .utf8
        )
    }

    @Test(
        "with the device's token it is accepted; the event keeps the token; a retry under its key replays, token or not"
    )
    func accepted() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            _ = try await app.client.registerPushToStartToken(
                path: .init(deviceId: "phone-1", activityType: "Match"),
                body: .json(.init(pushToStartToken: "aa01"))
            ).ok
            let headers: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "kickoff-1"]
            let created = try await api.send(
                .post,
                "/v1/activities",
                key: app.key.key,
                headers: headers,
                body: Self.body()
            )
            #expect(created.status == .created)
            let events = try await api.store.events(of: StreamID(app: app.id, activity: activityID("kickoff")))
            guard case .requested(let requested) = events.first?.event.payload else {
                Issue.record("no request event")
                return
            }
            #expect(
                requested.remoteStart
                    == RemoteStart(pushToStartToken: "aa01", alert: Alert(title: "Kick-off", body: "Lions v Bears"))
            )
            let read = try await app.client.getActivity(path: .init(activityId: "kickoff")).ok.body.json
            #expect(read.tokens?.map(\.kind) == [.pushToStart])
            #expect(read.tokens?.first?.token == "aa01" && read.tokens?.first?.invalidated == nil)

            // The token is gone, but the retry gets the first answer and appends nothing.
            _ = try await app.client.removePushToStartToken(path: .init(deviceId: "phone-1", activityType: "Match"))
                .noContent
            let retried = try await api.send(
                .post,
                "/v1/activities",
                key: app.key.key,
                headers: headers,
                body: Self.body()
            )
            #expect(retried.status == .created)
            #expect(try await api.store.events(of: StreamID(app: app.id, activity: activityID("kickoff"))).count == 1)
        }
    }

    @Test("the device's push-to-start budget refuses the next remote start 429 with Retry-After; other devices go on")
    func budget() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp(maxOpen: 20)
            let changed = try await api.admin.updateApp(
                path: .init(appId: app.id.rawValue),
                body: .json(.init(pushToStartBudgetPerHour: 2))
            ).ok.body.json
            #expect(changed.pushToStartBudgetPerHour == 2)
            for device in ["phone-1", "phone-2"] {
                _ = try await app.client.registerPushToStartToken(
                    path: .init(deviceId: device, activityType: "Match"),
                    body: .json(.init(pushToStartToken: "aa01"))
                ).ok
            }
            func start(_ activity: String, on device: String) async throws -> TestResponse {
                let body =
                    #"{"activityId":"\#(activity)","activityType":"Match","contentState":{},"deviceId":"\#(device)","remoteStart":{"alert":{"title":"t","body":"b"}}}"#
                return try await api.send(.post, "/v1/activities", key: app.key.key, body: Array(body.utf8))
            }
            #expect(try await start("m1", on: "phone-1").status == .created)
            #expect(try await start("m2", on: "phone-1").status == .created)
            let refused = try await start("m3", on: "phone-1")
            #expect(refused.status == .tooManyRequests)
            #expect(try problem(refused).code == "push_to_start_budget_exhausted")
            let retryAfter = try #require(refused.headers[.retryAfter].flatMap { Int($0) })
            #expect((3_590...3_600).contains(retryAfter))
            #expect(try await start("m4", on: "phone-2").status == .created)
            let recorded = try await api.store.rejections(of: app.id, code: "push_to_start_budget_exhausted", limit: 10)
            #expect(recorded.map(\.activity) == ["m3"])
        }
    }

    @Test("without a token it is refused 409 push_to_start_token_missing, recorded like every rejection")
    func missingToken() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let refused = try await api.send(.post, "/v1/activities", key: app.key.key, body: Self.body())
            #expect(refused.status == .conflict)
            let problem = try problem(refused)
            #expect(problem.code == "push_to_start_token_missing")
            #expect(
                problem.detail("deviceId") == .string("phone-1") && problem.detail("activityType") == .string("Match")
            )
            let recorded = try await api.store.rejections(of: app.id, code: "push_to_start_token_missing", limit: 10)
            #expect(recorded.count == 1)
        }
    }

    @Test(
        "a remote start without a device or an alert is a 400",
        arguments: [
            (
                #"{"activityType":"Match","contentState":{},"remoteStart":{"alert":{"title":"t","body":"b"}}}"#,
                "/deviceId"
            ),
            (#"{"activityType":"Match","contentState":{},"deviceId":"phone-1","remoteStart":{}}"#, nil),
            (#"{"activityType":"Match","contentState":{},"deviceId":"phone-1","alert":{"title":"t","body":"b"}}"#, nil),
        ]
    )
    func badRemoteStart(body: String, field: String?) async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let response = try await api.send(.post, "/v1/activities", key: app.key.key, body: Array(body.utf8))
            #expect(response.status == .badRequest)
            if let field { #expect(try problem(response).detail("field") == .string(field)) }
        }
    }
}

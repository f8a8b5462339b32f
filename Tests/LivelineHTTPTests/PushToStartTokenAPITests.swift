import ActivityLifecycle
import CanonicalJSON
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

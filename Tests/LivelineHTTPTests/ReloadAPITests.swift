import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import LivelineHTTP
import NIOCore
import Testing

@Suite("The reload routes: one request, answered at once with its targets, its progress readable")
struct ReloadAPITests {
    static func registerWidget(_ client: Client, device: String, kind: String = "Score") async throws {
        _ = try await client.registerWidgetPushToken(
            path: .init(deviceId: device),
            body: .json(.init(widgetPushToken: "aa01", widgets: [.init(kind: kind, family: "systemSmall")]))
        ).ok
    }

    @Test("a reload of widgets on every device with a kind is 202 with its id and targets; GET reads it")
    func everywhere() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            for device in ["phone-1", "phone-2"] { try await Self.registerWidget(app.client, device: device) }
            try await Self.registerWidget(app.client, device: "phone-3", kind: "Standings")
            let accepted = try await app.client.requestReload(
                body: .json(.init(pushType: .widgets, widgetKinds: ["Score"], allDevices: true))
            ).accepted.body.json
            #expect(accepted.targets == 2 && accepted.allDevices && accepted.widgetKinds == ["Score"])
            #expect(accepted.pushType == .widgets && accepted.deviceIds == nil)
            let read = try await app.client.getReload(path: .init(reloadId: accepted.reloadId)).ok.body.json
            #expect(read.reloadId == accepted.reloadId && read.targets == 2)
        }
    }

    @Test("named devices, and a control kind; an idempotency key replays the first answer, or refuses another body")
    func namedAndIdempotent() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            _ = try await app.client.registerControlPushToken(
                path: .init(deviceId: "phone-1", controlKind: "Door"),
                body: .json(.init(controlPushToken: "aa01"))
            ).ok
            let body = Array(#"{"pushType":"controls","controlKind":"Door","deviceIds":["phone-1","phone-2"]}"#.utf8)
            let headers: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "door-1"]
            let first = try await api.send(.post, "/v1/reloads", key: app.key.key, headers: headers, body: body)
            #expect(first.status == .accepted)
            let again = try await api.send(.post, "/v1/reloads", key: app.key.key, headers: headers, body: body)
            #expect(again.status == .accepted && again.body == first.body)
            let other = try await api.send(
                .post,
                "/v1/reloads",
                key: app.key.key,
                headers: headers,
                body: Array(#"{"pushType":"controls","controlKind":"Door","allDevices":true}"#.utf8)
            )
            #expect(other.status == .unprocessableContent)
            #expect(try problem(other).code == "idempotency_key_reused")
        }
    }

    @Test(
        "a request that does not say what or where is a 422 invalid_reload naming the field",
        arguments: [
            (#"{"pushType":"widgets"}"#, "/deviceIds"),
            (#"{"pushType":"widgets","allDevices":true}"#, "/widgetKinds"),
            (#"{"pushType":"widgets","allDevices":true,"deviceIds":["a"],"widgetKinds":["K"]}"#, "/deviceIds"),
            (#"{"pushType":"controls","allDevices":true}"#, "/controlKind"),
            (#"{"pushType":"widgets","controlKind":"Door","allDevices":true}"#, "/controlKind"),
            (#"{"pushType":"controls","controlKind":"Door","widgetKinds":["K"],"allDevices":true}"#, "/widgetKinds"),
        ]
    )
    func badInput(body: String, field: String) async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let response = try await api.send(.post, "/v1/reloads", key: app.key.key, body: Array(body.utf8))
            #expect(response.status == .unprocessableContent)
            #expect(try problem(response).code == "invalid_reload")
            #expect(try problem(response).detail("field") == .string(field))
        }
    }

    @Test("a device's pushes: none yet is an empty list; a bad device id is a 400")
    func devicePushes() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let none = try await app.client.listDevicePushes(path: .init(deviceId: "phone-1")).ok.body.json
            #expect(none.pushes.isEmpty)
            let bad = try await api.send(.get, "/v1/devices/phone%201/pushes", key: app.key.key)
            #expect(bad.status == .badRequest)
            #expect(try problem(bad).detail("field") == .string("deviceId"))
        }
    }

    @Test("another app's reload is not found; the admin key is refused")
    func isolation() async throws {
        try await APIFixture.run { api in
            let owner = try await api.makeApp()
            let other = try await api.makeApp()
            let accepted = try await owner.client.requestReload(
                body: .json(.init(pushType: .widgets, deviceIds: [DeviceID(rawValue: "phone-1")!]))
            ).accepted.body.json
            #expect(accepted.targets == 0)
            let uri = "/v1/reloads/\(accepted.reloadId)"
            let missing = try await api.send(.get, uri, key: other.key.key)
            #expect(missing.status == .notFound)
            #expect(try problem(missing).code == "reload_not_found")
            #expect(try await api.send(.get, uri, key: APIFixture.adminKey).status == .forbidden)
        }
    }
}

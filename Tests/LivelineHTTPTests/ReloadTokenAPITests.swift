import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import LivelineHTTP
import NIOCore
import Testing

@Suite("The widget and control token routes: register, rotate, read with the changes, remove")
struct ReloadTokenAPITests {
    typealias Widget = Components.Schemas.WidgetInfo

    @Test("PUT registers a widget token with its widgets, other widgets or a rotation replace it, none removes it")
    func widgetToken() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let none = try await api.send(.get, "/v1/devices/phone-1/widget-push-token", key: app.key.key)
            #expect(none.status == .notFound)
            #expect(try problem(none).code == "widget_push_token_not_found")

            let small = Widget(kind: "OrderStatus", family: "systemSmall")
            let inline = Widget(kind: "OrderStatus", family: "accessoryInline")
            let first = try await app.client.registerWidgetPushToken(
                path: .init(deviceId: "phone-1"),
                body: .json(.init(widgetPushToken: "aa01", widgets: [small, inline, small]))
            ).ok.body.json
            #expect(first.deviceId.rawValue == "phone-1" && first.widgetPushToken == "aa01")
            #expect(first.widgets == [inline, small] && first.registeredAt != nil)
            #expect(first.changes.map(\.change) == [.registered])

            _ = try await app.client.registerWidgetPushToken(
                path: .init(deviceId: "phone-1"),
                body: .json(.init(widgetPushToken: "aa01", widgets: [inline, small]))
            ).ok
            let rotated = try await app.client.registerWidgetPushToken(
                path: .init(deviceId: "phone-1"),
                body: .json(.init(widgetPushToken: "bb02", widgets: [small]))
            ).ok.body.json
            #expect(rotated.widgetPushToken == "bb02" && rotated.changes.map(\.token) == ["aa01", "bb02"])

            let emptied = try await app.client.registerWidgetPushToken(
                path: .init(deviceId: "phone-1"),
                body: .json(.init(widgetPushToken: "bb02", widgets: []))
            ).ok.body.json
            #expect(emptied.widgetPushToken == nil && emptied.widgets == nil)
            #expect(emptied.changes.map(\.change) == [.registered, .registered, .removed])
            let gone = try await api.send(.delete, "/v1/devices/phone-1/widget-push-token", key: app.key.key)
            #expect(gone.status == .notFound)

            _ = try await app.client.registerWidgetPushToken(
                path: .init(deviceId: "phone-1"),
                body: .json(.init(widgetPushToken: "cc03", widgets: [small]))
            ).ok
            _ = try await app.client.removeWidgetPushToken(path: .init(deviceId: "phone-1")).noContent
            let read = try await app.client.getWidgetPushToken(path: .init(deviceId: "phone-1")).ok.body.json
            #expect(read.widgetPushToken == nil && read.changes.last?.change == .removed)
        }
    }

    @Test("a control token per kind, its kind read from a percent-encoded path segment")
    func controlTokens() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let put = try await api.send(
                .put,
                "/v1/devices/phone-1/control-push-tokens/Garage%20Door",
                key: app.key.key,
                body: Array(#"{"controlPushToken":"aa01"}"#.utf8)
            )
            #expect(put.status == .ok)
            _ = try await app.client.registerControlPushToken(
                path: .init(deviceId: "phone-1", controlKind: "Lights"),
                body: .json(.init(controlPushToken: "bb02"))
            ).ok
            let door = try await app.client.getControlPushToken(
                path: .init(deviceId: "phone-1", controlKind: "Garage Door")
            ).ok.body.json
            #expect(door.controlKind == "Garage Door" && door.controlPushToken == "aa01")
            #expect(door.changes.map(\.change) == [.registered] && door.changes.first?.widgets == nil)

            _ = try await app.client.removeControlPushToken(path: .init(deviceId: "phone-1", controlKind: "Lights"))
                .noContent
            let lights = try await api.send(.get, "/v1/devices/phone-1/control-push-tokens/Lights", key: app.key.key)
            #expect(lights.status == .ok)
            let missing = try await api.send(.get, "/v1/devices/phone-1/control-push-tokens/Fan", key: app.key.key)
            #expect(missing.status == .notFound)
            #expect(try problem(missing).code == "control_push_token_not_found")
            #expect(try problem(missing).detail("controlKind") == .string("Fan"))
        }
    }

    @Test(
        "a bad token, widget, device id or body is a 400 naming it, and nothing is registered",
        arguments: [
            ("/v1/devices/phone-1/widget-push-token", #"{"widgetPushToken":"a b","widgets":[]}"#, "/widgetPushToken"),
            (
                "/v1/devices/phone-1/widget-push-token",
                #"{"widgetPushToken":"aa01","widgets":[{"kind":"","family":"systemSmall"}]}"#, nil
            ),
            (
                "/v1/devices/phone-1/widget-push-token",
                #"{"widgetPushToken":"aa01","widgets":[{"kind":"K","family":"systemSmall","size":1}]}"#, nil
            ),
            ("/v1/devices/phone-1/widget-push-token", #"{"widgetPushToken":"aa01"}"#, nil),
            ("/v1/devices/phone%201/widget-push-token", #"{"widgetPushToken":"aa01","widgets":[]}"#, "deviceId"),
            ("/v1/devices/phone-1/control-push-tokens/Door", #"{"controlPushToken":""}"#, "/controlPushToken"),
            ("/v1/devices/phone-1/control-push-tokens/Door", #"{"token":"aa01"}"#, nil),
        ]
    )
    func badInput(uri: String, body: String, field: String?) async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let response = try await api.send(.put, uri, key: app.key.key, body: Array(body.utf8))
            #expect(response.status == .badRequest)
            if let field { #expect(try problem(response).detail("field") == .string(field)) }
            for read in ["/v1/devices/phone-1/widget-push-token", "/v1/devices/phone-1/control-push-tokens/Door"] {
                #expect(try await api.send(.get, read, key: app.key.key).status == .notFound)
            }
        }
    }

    @Test("an app never sees another app's widget or control tokens; the admin key is refused")
    func isolation() async throws {
        try await APIFixture.run { api in
            let owner = try await api.makeApp()
            let other = try await api.makeApp()
            _ = try await owner.client.registerWidgetPushToken(
                path: .init(deviceId: "phone-1"),
                body: .json(.init(widgetPushToken: "aa01", widgets: [.init(kind: "K", family: "systemSmall")]))
            ).ok
            _ = try await owner.client.registerControlPushToken(
                path: .init(deviceId: "phone-1", controlKind: "Door"),
                body: .json(.init(controlPushToken: "aa01"))
            ).ok
            for uri in ["/v1/devices/phone-1/widget-push-token", "/v1/devices/phone-1/control-push-tokens/Door"] {
                #expect(try await api.send(.get, uri, key: other.key.key).status == .notFound)
                #expect(try await api.send(.delete, uri, key: other.key.key).status == .notFound)
                #expect(try await api.send(.get, uri, key: APIFixture.adminKey).status == .forbidden)
                #expect(try await api.send(.get, uri, key: owner.key.key).status == .ok)
            }
        }
    }
}

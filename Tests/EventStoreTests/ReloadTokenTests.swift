import ActivityLifecycle
import CanonicalJSON
import Postgres
import TestSupport
import Testing

@testable import EventStore

@Suite("Widget and control tokens: one per device (widgets) or per device and control kind, every change kept")
struct ReloadTokenTests {
    static func slot(
        _ fixture: StoreFixture,
        device: String = "phone-1",
        _ kind: ReloadKind = .widgets
    )
        -> ReloadTokenSlot
    {
        ReloadTokenSlot(app: fixture.app, device: DeviceID(rawValue: device)!, kind: kind)
    }

    static let small = WidgetInfo(kind: "OrderStatus", family: "systemSmall")
    static let inline = WidgetInfo(kind: "OrderStatus", family: "accessoryInline")
    static let score = WidgetInfo(kind: "Score", family: "systemMedium")

    /// The slot's row of `reload_tokens`: what a reload to every device reads.
    static func current(_ store: EventStore, _ slot: ReloadTokenSlot) async throws -> (String, [String])? {
        try await store.withConnection { connection in
            try connection.query(
                """
                SELECT token, array_to_string(widget_kinds, ',') AS kinds FROM reload_tokens
                WHERE app_id = \(slot.app.rawValue) AND device_id = \(slot.device.rawValue)
                    AND push_type = \(slot.kind.pushType) AND control_kind = \(slot.kind.controlKind)
                """
            ).single.map { row in
                (
                    try row.decode("token"),
                    try row.decode("kinds", as: String.self).split(separator: ",").map(String.init)
                )
            }
        }
    }

    @Test("a widget token: first, the same widgets in another order, other widgets, a rotation, none, removal")
    func widgetToken() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let slot = Self.slot(fixture)
            #expect(try await store.reloadToken(of: slot) == nil)
            #expect(try await store.removeReloadToken(of: slot) == false)

            let first = try await store.registerReloadToken("aa01", widgets: [Self.small, Self.inline], for: slot)
            #expect(first.changed && first.token?.current?.token == "aa01")
            #expect(first.token?.current?.widgets == [Self.inline, Self.small])
            #expect(try await Self.current(store, slot)! == ("aa01", ["OrderStatus"]))

            let reordered = try await store.registerReloadToken(
                "aa01",
                widgets: [Self.small, Self.inline, Self.small],
                for: slot
            )
            #expect(!reordered.changed && reordered.token == first.token)

            let more = try await store.registerReloadToken("aa01", widgets: [Self.small, Self.score], for: slot)
            #expect(more.changed && more.token?.current?.widgets == [Self.small, Self.score])
            #expect(try await Self.current(store, slot)! == ("aa01", ["OrderStatus", "Score"]))

            let rotated = try await store.registerReloadToken("bb02", widgets: [Self.score], for: slot)
            #expect(rotated.changed && rotated.token?.current?.token == "bb02")
            #expect(try await Self.current(store, slot)! == ("bb02", ["Score"]))

            // No push-enabled widget left: the token goes.
            let none = try await store.registerReloadToken("bb02", widgets: [], for: slot)
            #expect(none.changed && none.token?.current == nil)
            #expect(try await Self.current(store, slot) == nil)
            let history = try #require(try await store.reloadToken(of: slot)).changes
            #expect(history.map(\.kind) == [.registered, .registered, .registered, .removed])
            #expect(history.map(\.token) == ["aa01", "aa01", "bb02", nil])
            #expect(
                history.map(\.widgets) == [[Self.inline, Self.small], [Self.small, Self.score], [Self.score], nil]
            )

            // None again changes nothing; a new registration is current again.
            #expect(try await store.registerReloadToken("bb02", widgets: [], for: slot).changed == false)
            #expect(try await store.registerReloadToken("cc03", widgets: [Self.small], for: slot).changed)
            #expect(try await store.removeReloadToken(of: slot))
            #expect(try await store.removeReloadToken(of: slot) == false)
            #expect(try await store.reloadToken(of: slot)?.changes.map(\.kind).suffix(2) == [.registered, .removed])
        }
    }

    @Test("a control token per kind: registered, the same again, rotated and removed, kind by kind")
    func controlTokens() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let door = Self.slot(fixture, .control("GarageDoor"))
            let lights = Self.slot(fixture, .control("Lights"))
            #expect(try await store.registerReloadToken("aa01", widgets: [], for: door).changed)
            #expect(try await store.registerReloadToken("aa01", widgets: [], for: door).changed == false)
            #expect(try await store.registerReloadToken("bb02", widgets: [], for: lights).changed)
            #expect(try await store.registerReloadToken("cc03", widgets: [], for: door).changed)
            #expect(try await store.removeReloadToken(of: lights))

            let read = try #require(try await store.reloadToken(of: door))
            #expect(read.current?.token == "cc03" && read.current?.widgets == [])
            #expect(read.changes.map(\.token) == ["aa01", "cc03"] && read.changes.allSatisfy { $0.widgets == nil })
            #expect(try await store.reloadToken(of: lights)?.current == nil)
            #expect(try await Self.current(store, door)! == ("cc03", []))
        }
    }

    @Test("slots are separate per device, per kind and per app; the widget token is not a control's")
    func separateSlots() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let other = AppID(rawValue: "com.example.other")!
            try await store.createApp(other, AppSettings(bundleID: "com.example.other"), by: .commandLine)
            _ = try await store.registerReloadToken("aa01", widgets: [Self.small], for: Self.slot(fixture))
            _ = try await store.registerReloadToken("bb02", widgets: [], for: Self.slot(fixture, .control("Door")))
            for slot in [
                Self.slot(fixture, device: "phone-2"), Self.slot(fixture, .control("Lights")),
                ReloadTokenSlot(app: other, device: DeviceID(rawValue: "phone-1")!, kind: .widgets),
            ] {
                #expect(try await store.reloadToken(of: slot) == nil)
            }
            #expect(try await store.reloadToken(of: Self.slot(fixture))?.current?.token == "aa01")
        }
    }

    @Test("concurrent registrations of one slot leave the current row on its newest change")
    func concurrentRegistrations() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let slot = Self.slot(fixture)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<16 {
                    group.addTask {
                        _ = try await store.registerReloadToken(
                            "t\(index)",
                            widgets: [Self.small],
                            for: slot
                        )
                    }
                }
                try await group.waitForAll()
            }
            let read = try #require(try await store.reloadToken(of: slot))
            #expect(read.changes.count == 16)
            #expect(read.current?.token == read.changes.last?.token)
            #expect(try await Self.current(store, slot)?.0 == read.changes.last?.token)
        }
    }

    @Test("the changes are append-only: UPDATE and DELETE are refused")
    func appendOnly() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            _ = try await store.registerReloadToken("aa01", widgets: [Self.small], for: Self.slot(fixture))
            for statement: PostgresQuery in [
                "UPDATE reload_token_changes SET token = 'bb02'", "DELETE FROM reload_token_changes",
            ] {
                await #expect(throws: (any Error).self) {
                    try await store.withConnection { _ = try $0.execute(statement) }
                }
            }
            #expect(try await store.reloadToken(of: Self.slot(fixture))?.current?.token == "aa01")
        }
    }
}

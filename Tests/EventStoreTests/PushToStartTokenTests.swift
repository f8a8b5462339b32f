import ActivityLifecycle
import CanonicalJSON
import Postgres
import TestSupport
import Testing

@testable import EventStore

@Suite("Push-to-start tokens: one per device and activity type, every change kept")
struct PushToStartTokenTests {
    static func slot(
        _ fixture: StoreFixture,
        device: String = "phone-1",
        type: String = "DeliveryAttributes"
    ) -> PushToStartSlot {
        PushToStartSlot(app: fixture.app, device: DeviceID(rawValue: device)!, activityType: type)
    }

    @Test("a first token, the same again, a rotation, a removal and a new token: each change kept once")
    func registerRotateRemove() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let slot = Self.slot(fixture)
            #expect(try await store.pushToStartToken(of: slot) == nil)
            #expect(try await store.removePushToStartToken(of: slot) == false)

            let first = try await store.registerPushToStartToken("aa01", for: slot)
            #expect(first.changed && first.token.current?.token == "aa01")
            let again = try await store.registerPushToStartToken("aa01", for: slot)
            #expect(!again.changed && again.token == first.token)

            let rotated = try await store.registerPushToStartToken("bb02", for: slot)
            #expect(rotated.changed && rotated.token.current?.token == "bb02")
            #expect(rotated.token.changes.map(\.kind) == [.registered, .registered])
            #expect(rotated.token.changes.map(\.token) == ["aa01", "bb02"])

            #expect(try await store.removePushToStartToken(of: slot))
            #expect(try await store.removePushToStartToken(of: slot) == false)
            let removed = try #require(try await store.pushToStartToken(of: slot))
            #expect(removed.current == nil)
            #expect(removed.changes.map(\.kind) == [.registered, .registered, .removed])

            // After a removal, the same token is a new registration.
            let back = try await store.registerPushToStartToken("bb02", for: slot)
            #expect(back.changed && back.token.current?.token == "bb02" && back.token.changes.count == 4)
        }
    }

    @Test("slots are separate per activity type, per device and per app")
    func separateSlots() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let other = AppID(rawValue: "com.example.other")!
            try await store.createApp(other, AppSettings(bundleID: "com.example.other"), by: .commandLine)
            _ = try await store.registerPushToStartToken("aa01", for: Self.slot(fixture))
            for slot in [
                Self.slot(fixture, type: "GameAttributes"), Self.slot(fixture, device: "phone-2"),
                PushToStartSlot(app: other, device: DeviceID(rawValue: "phone-1")!, activityType: "DeliveryAttributes"),
            ] {
                #expect(try await store.pushToStartToken(of: slot) == nil)
            }
        }
    }

    @Test("only the token APNs declared dead stops being current, and only if it was not registered after")
    func invalidations() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let slot = Self.slot(fixture)
            func invalidate(_ token: String, since: String) async throws {
                try await store.withConnection { connection in
                    _ = try connection.execute(
                        """
                        INSERT INTO push_to_start_token_changes
                            (app_id, device_id, activity_type, change, token, status, reason, invalid_since)
                        VALUES (\(slot.app.rawValue), \(slot.device.rawValue), \(slot.activityType), 'invalidated',
                            \(token), 410, 'Unregistered', now() + \(since)::interval)
                        """
                    )
                }
            }
            _ = try await store.registerPushToStartToken("aa01", for: slot)
            // Dead before it was registered: the device gave it again since.
            try await invalidate("aa01", since: "-1 hour")
            #expect(try await store.pushToStartToken(of: slot)?.current?.token == "aa01")
            _ = try await store.registerPushToStartToken("bb02", for: slot)
            // An older token declared dead leaves the newer one alone.
            try await invalidate("aa01", since: "0 seconds")
            #expect(try await store.pushToStartToken(of: slot)?.current?.token == "bb02")
            try await invalidate("bb02", since: "0 seconds")
            let dead = try #require(try await store.pushToStartToken(of: slot))
            #expect(dead.current == nil)
            #expect(dead.changes.last?.kind == .invalidated && dead.changes.last?.reason == "Unregistered")
            #expect(try await store.removePushToStartToken(of: slot) == false)
        }
    }

    @Test("the changes are append-only: UPDATE and DELETE are refused")
    func appendOnly() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            _ = try await store.registerPushToStartToken("aa01", for: Self.slot(fixture))
            for statement: PostgresQuery in [
                "UPDATE push_to_start_token_changes SET token = 'bb02'", "DELETE FROM push_to_start_token_changes",
            ] {
                await #expect(throws: (any Error).self) {
                    try await store.withConnection { _ = try $0.execute(statement) }
                }
            }
            #expect(try await store.pushToStartToken(of: Self.slot(fixture))?.current?.token == "aa01")
        }
    }
}

import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

@Suite("The rules of app settings, shared by the admin API and `liveline apps`")
struct AppSettingsTests {
    @Test("defaults are valid; each setting outside its range names its field")
    func rules() throws {
        #expect(try AppSettings(bundleID: "com.example").validated() == AppSettings(bundleID: "com.example"))
        let broken: [(AppSettings, String)] = [
            (AppSettings(bundleID: ""), "bundleId"),
            (AppSettings(bundleID: String(repeating: "b", count: 256)), "bundleId"),
            (AppSettings(bundleID: "b", maxOpen: -1), "maxOpen"),
            (AppSettings(bundleID: "b", maxOpen: Int(Int32.max) + 1), "maxOpen"),
            (AppSettings(bundleID: "b", maxOpenPerDevice: 0), "maxOpenPerDevice"),
            (AppSettings(bundleID: "b", priorityBudgetPerHour: -5), "priorityBudgetPerHour"),
        ]
        for (settings, field) in broken {
            do {
                _ = try settings.validated()
                Issue.record("\(settings) was accepted")
            } catch {
                #expect(error.field == field)
            }
        }
        #expect(try AppSettings(bundleID: "b", maxOpen: 0, maxOpenPerDevice: 1).validated().maxOpen == 0)
    }
}

@Suite("The audit trail of administrative changes")
struct AdminChangeTests {
    @Test("every change is recorded with its actor, only settings that changed, and the trail is append-only")
    func trail() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 5))
        let changes = try await fixture.withStore { store in
            try await store.updateApp(fixture.app, AppSettings(bundleID: "b", maxOpen: 7), by: .adminAPI)
            try await store.updateApp(fixture.app, AppSettings(bundleID: "b", maxOpen: 7), by: .adminAPI)
            let key = try await store.issueKey(for: fixture.app, by: .commandLine)
            _ = try await store.revokeKey(key.keyID, of: fixture.app, by: .adminAPI)
            _ = try await store.revokeKey(key.keyID, of: fixture.app, by: .adminAPI)
            try await store.setGlobalMaxOpen(40, by: .configuration)
            try await store.setGlobalMaxOpen(40, by: .configuration)
            return (try await store.adminChanges(of: fixture.app, limit: 100), key.keyID)
        }
        let trail = changes.0.reversed().map { "\($0.actor) \($0.action)" }
        #expect(
            trail == [
                "command_line app.created", "admin_api app.updated", "command_line key.issued",
                "admin_api key.revoked", "configuration limits.updated",
            ]
        )
        let updated = try #require(changes.0.first { $0.action == "app.updated" })
        #expect(updated.details == JSONObject(["maxOpen": .object(["from": .number(5), "to": .number(7)])]))
        let revoked = try #require(changes.0.first { $0.action == "key.revoked" })
        #expect(revoked.details == JSONObject(["keyId": .string(changes.1.uuidString.lowercased())]))
        try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                try connection.execute("UPDATE apps SET frequent_updates = true")
                let actor: String = try connection.query("SELECT actor FROM admin_changes ORDER BY id DESC LIMIT 1")
                    .single!.decode(0)
                #expect(actor.hasPrefix("sql:"))
                let refused = try #require(throws: PostgresError.self) {
                    try connection.execute("DELETE FROM admin_changes")
                }
                #expect(refused.sqlState == .insufficientPrivilege)
            }
        }
    }
}

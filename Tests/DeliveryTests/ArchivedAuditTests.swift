import ActivityLifecycle
import CanonicalJSON
import EventLogTools
import EventStore
import Foundation
import LocalAPNs
import LogArchive
import Testing

@testable import Delivery

/// Support's question about a retired activity is the same as about a live one: did the phone
/// get it? Its events, pushes, refusals and dead tokens are retired on their own time, into
/// archives of their own tables; the audit reads them all.
@Suite("liveline audit of a retired activity")
struct ArchivedAuditTests {
    @Test("a retired activity's audit, from the archives, is the one the live log gave: pushes, refusals, dead tokens")
    func theArchivedAuditIsTheLiveOne() async throws {
        let folder = ArchiveFolder(
            path: FileManager.default.temporaryDirectory.appendingPathComponent("audit-\(UUID().uuidString)").path
        )
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        try await DeliveryFixture.run { fixture, store in
            let (dead, living) = (DeliveryFixture.token(1), DeliveryFixture.token(2))
            let stream = fixture.stream("retired")
            try await fixture.withWorkers {
                fixture.server.unregister(deviceToken: dead, at: 1_700_000_000_000)
                _ = try await fixture.activityWithToken("retired", token: dead, in: store)
                try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                try await fixture.eventually("APNs declares the first token dead") {
                    try await store.deliveries(of: stream).contains { $0.outcome == .tokenInvalidated }
                }
                try await fixture.execute(.registerPushToken(living), on: stream, in: store)
                try await fixture.eventually("the newest content reaches the new token") {
                    fixture.steps(receivedBy: living) == [1]
                }
                for step in 2...3 {
                    try await fixture.execute(DeliveryFixture.update(step), on: stream, in: store)
                    try await fixture.eventually("update \(step) is delivered") {
                        fixture.steps(receivedBy: living).last == Int64(step)
                    }
                }
                try await fixture.execute(.end(.init(dismissal: .immediate)), on: stream, in: store)
                try await fixture.eventually("the end is delivered") {
                    try await store.deliveries(of: stream).filter { $0.outcome == .delivered }.count == 4
                }
                let late = try await store.execute(DeliveryFixture.update(4), on: stream, at: .now())
                guard case .rejected = late.outcome else {
                    Issue.record("an update after the end was accepted")
                    return
                }
            }

            let live = try await store.audit(of: stream, archives: folder)
            #expect(live.archive == nil)
            #expect(live.entries.flatMap(\.deliveries).count >= 5)
            #expect(live.entries.contains { $0.token?.invalidated?.reason == "Unregistered" })
            #expect(live.entries.contains { $0.type == "refused update" })

            // Every partition of every table ends before the retention, as of two days from now.
            let retired = try await store.retirePartitions(
                RetentionPolicy(retention: .seconds(86_400), archive: folder, workShare: 1),
                asOf: .now() + .seconds(2 * 86_400)
            )
            let tables = Set((retired ?? []).filter { ($0.archive?.rows ?? 0) > 0 }.map(\.table))
            #expect(tables == ["events", "deliveries", "rejections", "push_token_invalidations"])
            #expect(try await store.events(of: stream).isEmpty)

            let archived = try await store.audit(of: stream, archives: folder)
            #expect(archived.archive?.table == "events")
            #expect(archived.entries == live.entries)
            #expect(try AuditReport.json(archived.entries) == AuditReport.json(live.entries))
        }
    }
}

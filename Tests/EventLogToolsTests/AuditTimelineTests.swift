import ActivityLifecycle
import CanonicalJSON
import EventLogTools
import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

@Suite("The audit timeline of an activity")
struct AuditTimelineTests {
    static let app = AppID(rawValue: "com.example.delivery")!
    static let stream = StreamID(app: app, activity: ActivityID(rawValue: "order-1042")!)
    static let start = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)
    static let snapshots = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "Snapshots")

    /// A known life: request, updates (an alert, a downgrade), a refusal, a push token, stale,
    /// an update back to active, an immediate end, and a refused update after it.
    static func recordKnownLife(_ store: EventStore) async throws {
        try await store.createApp(
            app,
            AppSettings(bundleID: "com.example.delivery", priorityBudgetPerHour: 1),
            by: .commandLine
        )
        func at(_ seconds: Int64) -> Timestamp { start + .seconds(seconds) }
        func content(_ stage: String) -> ActivityContent {
            ActivityContent(contentState: JSONObject(["stage": .string(stage)]))
        }
        let commands: [(Int64, Command)] = [
            (
                0,
                .request(
                    .init(
                        activityType: "DeliveryAttributes",
                        attributes: JSONObject(["order": .string("1042")]),
                        content: ActivityContent(
                            contentState: JSONObject(["stage": .string("packed")]),
                            staleDate: at(600)
                        ),
                        deviceID: DeviceID(rawValue: "phone-1")
                    )
                )
            ),
            (
                60,
                .update(.init(content: content("picked up"), alert: Alert(title: "On its way", body: "Left the depot")))
            ),
            (
                120,
                .update(
                    .init(
                        content: ActivityContent(
                            contentState: JSONObject(["stage": .string("nearby")]),
                            staleDate: at(600)
                        )
                    )
                )
            ),
            (130, .update(.init(content: content("at the door"), priority: .high))),
            (140, .registerPushToken("80f1a9c3d2e4b5a6")),
            (700, .update(.init(content: content("delivered soon")))),
            (800, .end(.init(content: content("delivered"), dismissal: .immediate))),
            (900, .update(.init(content: content("again")))),
        ]
        for (seconds, command) in commands {
            try await store.execute(command, on: stream, at: at(seconds))
        }
    }

    static func withStore(_ body: (EventStore, ConnectionPool) async throws -> Void) async throws {
        let database = try await TestDatabase.makeMigrated()
        try await TestDatabase.withPool(database, maximumConnections: 2) { pool in
            try await body(EventStore(pool: pool, lifecycle: Lifecycle()), pool)
        }
    }

    static func timeline(_ store: EventStore) async throws -> [AuditEntry] {
        AuditTimeline.build(
            events: try await store.events(of: stream),
            rejections: try await store.rejections(of: app, activity: stream.activity, limit: 100),
            lifecycle: store.lifecycle
        )
    }

    /// Positions and commit times differ from run to run: numbered in order, and one fixed time.
    static func normalized(_ entries: [AuditEntry]) -> [AuditEntry] {
        entries.enumerated().map { index, entry in
            AuditEntry(
                position: entry.position.map { _ in Int64(1001 + index) },
                version: entry.version,
                occurredAt: entry.occurredAt,
                recordedAt: entry.recordedAt.map { _ in start },
                type: entry.type,
                cause: entry.cause,
                stateBefore: entry.stateBefore,
                stateAfter: entry.stateAfter,
                summary: entry.summary,
                data: entry.data,
                problem: entry.problem
            )
        }
    }

    @Test("the table and JSON of a known activity match the committed snapshots")
    func snapshots() async throws {
        try await Self.withStore { store, _ in
            try await Self.recordKnownLife(store)
            let entries = Self.normalized(try await Self.timeline(store))
            #expect(entries.count == 10)
            for (name, actual) in [
                ("audit.txt", AuditReport.table(entries)), ("audit.json", try AuditReport.json(entries)),
            ] {
                let file = Self.snapshots.appending(path: name)
                if ProcessInfo.processInfo.environment["LIVELINE_RECORD_SNAPSHOTS"] == "1" {
                    try actual.write(to: file, atomically: true, encoding: .utf8)
                }
                let expected = try String(contentsOf: file, encoding: .utf8)
                #expect(actual == expected, "\(name) differs; LIVELINE_RECORD_SNAPSHOTS=1 rewrites it")
            }
        }
    }

    @Test("an event the state machine could not have produced is shown as corrupt, and folding stops there")
    func corruption() async throws {
        try await Self.withStore { store, pool in
            try await Self.recordKnownLife(store)
            // Dismissed at version 8; a start after that is impossible.
            try await pool.withConnection { connection in
                try connection.execute(
                    """
                    INSERT INTO events (position, app_id, activity_id, version, type, caused_by, occurred_at)
                    VALUES (pg_current_xact_id()::text::bigint * 65536, \(Self.app.rawValue), 'order-1042', 9,
                            'activity.started', 'system', '2027-01-15T08:00:00Z')
                    """
                )
            }
            let entries = try await Self.timeline(store)
            let corrupt = try #require(entries.first { $0.problem != nil })
            #expect(corrupt.version == 9)
            #expect(corrupt.type == "activity.started")
            #expect(AuditReport.table(entries).contains("corrupt: "))
        }
    }
}

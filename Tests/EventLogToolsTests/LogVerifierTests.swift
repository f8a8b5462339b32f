import ActivityLifecycle
import CanonicalJSON
import EventLogTools
import EventStore
import Postgres
import TestSupport
import Testing

@Suite("liveline verify: the whole log, stream by stream")
struct LogVerifierTests {
    typealias Fixture = AuditTimelineTests

    @Test("a log made by real commands has no findings, in batches of any size")
    func clean() async throws {
        try await Fixture.withStore { store, _ in
            try await Fixture.recordKnownLife(store)
            for index in 0..<5 {
                let stream = StreamID(app: Fixture.app, activity: ActivityID(rawValue: "other-\(index)")!)
                try await store.execute(
                    .request(.init(activityType: "T", content: ActivityContent(contentState: .empty))),
                    on: stream,
                    at: Fixture.start
                )
                try await store.execute(.end(.init(dismissal: .immediate)), on: stream, at: Fixture.start + .seconds(1))
            }
            for batchSize in [1, 3, 10_000] {
                let summary = try await LogVerifier(
                    store: store,
                    now: Fixture.start + .seconds(60),
                    batchSize: batchSize
                )
                .verify()
                #expect(summary.findings.isEmpty)
                #expect(summary.streams == 6)
                #expect(summary.events == 8 + 5 * 3)
                #expect(summary.isClean)
            }
        }
    }

    @Test("a widget token slot out of line with its changes makes the log unclean, though every stream folds")
    func reloadTokens() async throws {
        try await Fixture.withStore { store, pool in
            try await Fixture.recordKnownLife(store)
            let slot = ReloadTokenSlot(app: Fixture.app, device: DeviceID(rawValue: "phone-1")!, kind: .widgets)
            _ = try await store.registerReloadToken(
                "ab01",
                widgets: [WidgetInfo(kind: "Score", family: "systemSmall")],
                for: slot
            )
            let verifier = LogVerifier(store: store, now: Fixture.start + .seconds(60))
            var summary = try await verifier.verify()
            #expect(summary.isClean && summary.reloads.slots == 1)
            try await pool.withConnection { connection in
                try connection.execute("UPDATE reload_tokens SET token = 'ffff'")
            }
            summary = try await verifier.verify()
            #expect(summary.findings.isEmpty && !summary.isClean)
            #expect(summary.reloads.problems.count == 1)
        }
    }

    @Test("an illegal transition and a version gap inserted by hand are found, naming stream, version and rule")
    func corruption() async throws {
        try await Fixture.withStore { store, pool in
            try await Fixture.recordKnownLife(store)
            let gap = StreamID(app: Fixture.app, activity: ActivityID(rawValue: "gap")!)
            try await store.execute(
                .request(.init(activityType: "T", content: ActivityContent(contentState: .empty))),
                on: gap,
                at: Fixture.start
            )
            try await pool.withConnection { connection in
                for (activity, version, type) in [
                    ("order-1042", 9, "activity.started"), ("gap", 3, "activity.became_stale"),
                ] {
                    try connection.execute(
                        """
                        INSERT INTO events (position, app_id, activity_id, version, type, caused_by, occurred_at)
                        VALUES (pg_current_xact_id()::text::bigint * 65536, \(Fixture.app.rawValue), \(activity),
                                \(Int32(version)), \(type), 'system', '2027-01-15T09:00:00Z')
                        """
                    )
                }
            }
            let summary = try await LogVerifier(store: store, now: Fixture.start + .seconds(3600)).verify()
            #expect(summary.findings.map(\.rule) == [.transition, .transition])
            #expect(summary.findings.map(\.stream.activity.rawValue) == ["gap", "order-1042"])
            #expect(summary.findings.map(\.version) == [3, 9])
        }
    }

    @Test("a deadline overdue by more than the slack is a finding; within the slack it is not")
    func overdueDeadline() async throws {
        try await Fixture.withStore { store, _ in
            try await store.createApp(Fixture.app, AppSettings(bundleID: "b"), by: .commandLine)
            let stream = StreamID(app: Fixture.app, activity: ActivityID(rawValue: "forgotten")!)
            try await store.execute(
                .request(.init(activityType: "T", content: ActivityContent(contentState: .empty))),
                on: stream,
                at: Fixture.start
            )
            let lifetimeEnd = Fixture.start + .seconds(8 * 3600)
            let onTime = try await LogVerifier(store: store, now: lifetimeEnd + .seconds(30)).verify()
            #expect(onTime.findings.isEmpty)
            let late = try await LogVerifier(store: store, now: lifetimeEnd + .seconds(120)).verify()
            #expect(late.findings.map(\.rule) == [.deadline])
            #expect(late.findings.first?.evidence.contains("lifetime") == true)
        }
    }

    @Test("a time-driven transition recorded later than the slack after it was due is a finding")
    func lateTransition() async throws {
        try await Fixture.withStore { store, _ in
            try await store.createApp(Fixture.app, AppSettings(bundleID: "b"), by: .commandLine)
            let stream = StreamID(app: Fixture.app, activity: ActivityID(rawValue: "caught-up")!)
            // Requested ten hours ago; the worker only now ends it, two hours after its lifetime.
            let now = Timestamp.now()
            try await store.execute(
                .request(.init(activityType: "T", content: ActivityContent(contentState: .empty))),
                on: stream,
                at: now - .seconds(10 * 3600)
            )
            _ = try await store.applyDueDeadlines(at: now, limit: 10)
            let strict = try await LogVerifier(store: store, now: now).verify()
            #expect(strict.findings.map(\.rule) == [.deadline])
            #expect(strict.findings.first?.version == 2)
            #expect(strict.findings.first?.evidence.hasPrefix("activity.ended was due at") == true)
            let lenient = try await LogVerifier(store: store, now: now, slack: .seconds(3 * 3600)).verify()
            #expect(lenient.findings.isEmpty)
        }
    }
}

import ActivityLifecycle
import CanonicalJSON
import EmbeddedPostgres
import EventLogTools
import EventStore
import Postgres
import TestSupport
import Testing

@Suite("liveline verify: caps over history, replayed in commit order")
struct CapHistoryTests {
    typealias Fixture = AuditTimelineTests
    static let app = Fixture.app
    static let phone = DeviceID(rawValue: "phone-1")!

    static func stream(_ name: String, of app: AppID = app) -> StreamID {
        StreamID(app: app, activity: ActivityID(rawValue: name)!)
    }

    static func request(device: DeviceID? = nil) -> Command {
        .request(.init(activityType: "T", content: ActivityContent(contentState: .empty), deviceID: device))
    }

    /// Copies the stream of `source` to a new activity `name` in one transaction of its own:
    /// an opening the caps never saw, as a broken store would append it.
    static func appendBehindTheCaps(_ name: String, copying source: String, _ pool: ConnectionPool) async throws {
        try await pool.withConnection { connection in
            try connection.execute(
                """
                INSERT INTO events (position, app_id, activity_id, version, type, data, caused_by, occurred_at)
                SELECT pg_current_xact_id()::text::bigint * 65536 + version, app_id, \(name), version, type, data,
                       caused_by, occurred_at
                FROM events WHERE app_id = \(app.rawValue) AND activity_id = \(source)
                """
            )
        }
    }

    static func verify(_ store: EventStore) async throws -> LogVerifier.Summary {
        try await LogVerifier(store: store, now: Fixture.start + .seconds(60)).verify()
    }

    @Test("openings appended behind the caps are found against the app cap in force when they committed")
    func appCapOverChanges() async throws {
        try await Fixture.withStore { store, pool in
            try await store.createApp(Self.app, AppSettings(bundleID: "b", maxOpen: 2), by: .commandLine)
            for name in ["a", "b"] { try await store.execute(Self.request(), on: Self.stream(name), at: Fixture.start) }
            try await Self.appendBehindTheCaps("c", copying: "a", pool)  // 3 open, cap 2
            try await store.updateApp(Self.app, AppSettings(bundleID: "b", maxOpen: 5), by: .commandLine)
            try await Self.appendBehindTheCaps("d", copying: "a", pool)  // 4 open, cap 5
            try await store.updateApp(Self.app, AppSettings(bundleID: "b", maxOpen: 3), by: .commandLine)
            try await store.execute(.end(.init(dismissal: .immediate)), on: Self.stream("a"), at: Fixture.start)
            try await Self.appendBehindTheCaps("e", copying: "b", pool)  // 4 open again, cap 3

            let summary = try await Self.verify(store)
            #expect(summary.findings.map(\.stream) == [Self.stream("c"), Self.stream("e")])
            #expect(summary.findings.allSatisfy { $0.rule == .cap && $0.version == 1 })
            #expect(summary.findings.last?.evidence.contains("open activities 4, above the cap of app") == true)
            #expect(summary.caps == CapHistoryCheck.Outcome(checkedOpenings: 5))

            // replay --verify finds the same log at odds with the projection the caps kept.
            let report = try await ProjectionReplay(store: store).run(swap: false)
            #expect(!report.isConsistent)
            #expect(Set(report.mismatches.map(\.stream)) == [Self.stream("c"), Self.stream("d"), Self.stream("e")])
            #expect(report.countMismatches.contains { $0.app == Self.app && $0.device == nil && $0.rebuilt == 4 })
        }
    }

    @Test("an opening behind the caps is found against the per-device cap and the global cap at once")
    func deviceAndGlobalCaps() async throws {
        try await Fixture.withStore { store, pool in
            try await store.setGlobalMaxOpen(3, by: .commandLine)
            try await store.createApp(
                Self.app,
                AppSettings(bundleID: "b", maxOpen: 10, maxOpenPerDevice: 1),
                by: .commandLine
            )
            try await store.execute(Self.request(device: Self.phone), on: Self.stream("p"), at: Fixture.start)
            for name in ["q", "r"] { try await store.execute(Self.request(), on: Self.stream(name), at: Fixture.start) }
            try await Self.appendBehindTheCaps("s", copying: "p", pool)

            let summary = try await Self.verify(store)
            #expect(summary.findings.map(\.stream) == [Self.stream("s"), Self.stream("s")])
            #expect(summary.findings.map(\.rule) == [.cap, .cap])
            #expect(summary.findings[0].evidence.contains("device phone-1 of app com.example.delivery 2"))
            #expect(summary.findings[1].evidence.contains("above the global cap of 3"))
        }
    }

    @Test("a log written by racing openings, closings and cap changes replays without a breach")
    func racingHistoryHasNoBreach() async throws {
        let apps = [Self.app, AppID(rawValue: "com.example.rides")!]
        let devices: [DeviceID?] = [Self.phone, DeviceID(rawValue: "phone-2")!, nil]
        let database = try await TestDatabase.makeMigrated()
        try await TestDatabase.withPool(database, maximumConnections: 8) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            try await store.setGlobalMaxOpen(5, by: .commandLine)
            for app in apps {
                try await store.createApp(
                    app,
                    AppSettings(bundleID: "b", maxOpen: 3, maxOpenPerDevice: 2),
                    by: .commandLine
                )
            }
            let admitted = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        var open: [StreamID] = []
                        var admitted = 0
                        for step in 0..<60 {
                            if step % 3 == 2, !open.isEmpty {
                                let stream = open.removeFirst()
                                try await store.execute(
                                    .end(.init(dismissal: .immediate)),
                                    on: stream,
                                    at: Fixture.start
                                )
                                continue
                            }
                            let stream = Self.stream("w\(writer)-\(step)", of: apps[(writer + step) % 2])
                            let device = devices[(writer * 7 + step) % 3]
                            // Refused when a cap is full, as it must be.
                            let result = try await store.execute(
                                Self.request(device: device),
                                on: stream,
                                at: Fixture.start
                            )
                            if case .accepted = result.outcome {
                                open.append(stream)
                                admitted += 1
                            }
                        }
                        return admitted
                    }
                }
                group.addTask {
                    for step in 0..<60 {
                        let app = apps[step % 2]
                        try await store.updateApp(
                            app,
                            AppSettings(bundleID: "b", maxOpen: 1 + step % 4, maxOpenPerDevice: 1 + step % 2),
                            by: .commandLine
                        )
                        try await store.setGlobalMaxOpen(2 + step % 5, by: .commandLine)
                    }
                    return 0
                }
                return try await group.reduce(0, +)
            }
            #expect(admitted > 10)
            let summary = try await Self.verify(store)
            #expect(summary.findings.isEmpty, "\(summary.findings)")
            #expect(summary.caps == CapHistoryCheck.Outcome(checkedOpenings: admitted))
        }
    }

    @Test("without commit times recorded, verify says the caps were not checked")
    func notCheckedWithoutCommitTimes() async throws {
        try await TestDatabase.withPrivateCluster(settings: ["track_commit_timestamp": "off"]) { cluster in
            let url = cluster.url(database: cluster.defaultDatabase)
            try await TestDatabase.migrate(url)
            try await TestDatabase.withPool(url) { pool in
                let store = EventStore(pool: pool, lifecycle: Lifecycle())
                try await store.createApp(Self.app, AppSettings(bundleID: "b", maxOpen: 1), by: .commandLine)
                try await store.execute(Self.request(), on: Self.stream("a"), at: Fixture.start)
                try await Self.appendBehindTheCaps("b", copying: "a", pool)
                let summary = try await Self.verify(store)
                #expect(summary.findings.isEmpty)
                #expect(summary.caps.notChecked?.contains("track_commit_timestamp is off") == true)
            }
        }
    }
}

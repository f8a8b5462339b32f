import ActivityLifecycle
import CanonicalJSON
import EventStore
import Postgres
import TestSupport
import Testing

@Suite("Caps are exact under concurrency")
struct CapTests {
    /// Sends `count` requests at once, spread over two stores with separate pools (two
    /// "processes"); returns the results.
    private func race(
        _ count: Int,
        _ fixture: StoreFixture,
        command: @escaping @Sendable (Int) -> (Command, StreamID)
    ) async throws -> [CommandResult] {
        try await fixture.withStore(connections: 8) { first in
            try await fixture.withStore(connections: 8) { second in
                try await withThrowingTaskGroup(of: CommandResult.self) { group in
                    for index in 0..<count {
                        let store = index.isMultiple(of: 2) ? first : second
                        let (command, stream) = command(index)
                        group.addTask { try await store.execute(command, on: stream, at: fixture.now) }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
            }
        }
    }

    private func openInProjection(_ fixture: StoreFixture) async throws -> Int {
        try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                try connection.query("SELECT count(*) FROM activities WHERE state IN ('pending', 'active', 'stale')")
                    .single!.decode(0)
            }
        }
    }

    @Test("200 concurrent requests against an app cap of 10 admit exactly 10")
    func appCap() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 10))
        let results = try await race(200, fixture) { (requestCommand(), fixture.stream("a\($0)")) }
        #expect(results.filter { $0.accepted != nil }.count == 10)
        let rejections = results.compactMap(\.rejection)
        #expect(rejections.count == 190)
        #expect(rejections.allSatisfy { $0.code == "target_maximum_exceeded" })
        #expect(rejections.contains(.targetMaximumExceeded(limit: 10, count: 10)))
        #expect(try await openInProjection(fixture) == 10)
        let counts = try await fixture.withStore { try await $0.openCounts(of: fixture.app) }
        #expect(counts.app == 10 && counts.global == 10)
    }

    @Test("200 concurrent requests of two apps against a global cap of 10 admit exactly 10")
    func globalCap() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 1_000))
        let other = AppID(rawValue: "com.example.other")!
        try await fixture.withStore { store in
            try await store.createApp(other, AppSettings(bundleID: "o", maxOpen: 1_000), by: .commandLine)
            try await store.setGlobalMaxOpen(10, by: .commandLine)
        }
        let results = try await race(200, fixture) { index in
            let app = index % 4 < 2 ? fixture.app : other
            return (requestCommand(), StreamID(app: app, activity: ActivityID(rawValue: "g\(index)")!))
        }
        #expect(results.filter { $0.accepted != nil }.count == 10)
        #expect(results.compactMap(\.rejection).allSatisfy { $0.code == "global_maximum_exceeded" })
        #expect(results.compactMap(\.rejection).contains(.globalMaximumExceeded(limit: 10, count: 10)))
        #expect(try await openInProjection(fixture) == 10)
    }

    @Test("200 concurrent requests for one device against a device cap of 3 admit exactly 3")
    func deviceCap() async throws {
        let fixture = try await StoreFixture.make(
            settings: AppSettings(bundleID: "b", maxOpen: 1_000, maxOpenPerDevice: 3)
        )
        let results = try await race(200, fixture) { index in
            (requestCommand(device: index.isMultiple(of: 2) ? "phone-a" : "phone-b"), fixture.stream("d\(index)"))
        }
        // Three per device, two devices.
        #expect(results.filter { $0.accepted != nil }.count == 6)
        #expect(results.compactMap(\.rejection).allSatisfy { $0.code == "device_maximum_exceeded" })
    }

    @Test("after any mix of opens and closes, the counts equal the open activities in the projection")
    func countsFollowTheProjection() async throws {
        let fixture = try await StoreFixture.make(
            settings: AppSettings(bundleID: "b", maxOpen: 20, maxOpenPerDevice: 8)
        )
        try await fixture.withStore(connections: 8) { store in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<60 {
                    group.addTask {
                        let stream = fixture.stream("m\(index % 30)")
                        let device = "phone-\(index % 3)"
                        switch index % 4 {
                        case 0, 1:
                            _ = try? await store.execute(requestCommand(device: device), on: stream, at: fixture.now)
                        case 2:
                            _ = try? await store.execute(
                                .end(.init(dismissal: .immediate)),
                                on: stream,
                                at: fixture.now
                            )
                        default: _ = try? await store.execute(.dismiss(.userRemoved), on: stream, at: fixture.now)
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        let (projection, counts, devices) = try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                let open: Int = try connection.query(
                    "SELECT count(*) FROM activities WHERE state IN ('pending', 'active', 'stale')"
                ).single!.decode(0)
                let counted: Int = try connection.query(
                    "SELECT open FROM app_open_counts"
                ).single!.decode(0)
                let mismatchedDevices: Int = try connection.query(
                    """
                    SELECT count(*) FROM device_open_counts d
                    WHERE d.open <> (SELECT count(*) FROM activities a WHERE a.device_id = d.device_id
                                     AND a.state IN ('pending', 'active', 'stale'))
                    """
                ).single!.decode(0)
                return (open, counted, mismatchedDevices)
            }
        }
        let global = try await fixture.withStore { try await $0.openCounts(of: fixture.app) }
        #expect(counts == projection)
        #expect(global.global == projection)
        #expect(devices == 0)
    }

    @Test("a request is never refused while there is room")
    func noFalseRefusal() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 1_000))
        try await fixture.withStore { try await $0.setGlobalMaxOpen(40, by: .commandLine) }
        // 40 concurrent requests against a global cap of 40 spread over 16 stripes: all fit.
        let results = try await race(40, fixture) { (requestCommand(), fixture.stream("r\($0)")) }
        #expect(results.allSatisfy { $0.accepted != nil })
    }

    @Test("after a cap is lowered below the open count, closings retire the excess before making room")
    func loweredAppCap() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 16))
        try await lowerCapAndRace(fixture, expectedOpen: 8) { store in
            try await store.updateApp(fixture.app, AppSettings(bundleID: "b", maxOpen: 8), by: .commandLine)
        }
    }

    @Test("after the global cap is lowered below the open count, closings retire the excess first")
    func loweredGlobalCap() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 1_000))
        try await fixture.withStore { try await $0.setGlobalMaxOpen(32, by: .commandLine) }
        try await lowerCapAndRace(fixture, expectedOpen: 8, global: true) { store in
            try await store.setGlobalMaxOpen(8, by: .commandLine)
        }
    }

    /// Opens twice `expectedOpen` activities, which fills stripes of the app's (or the global)
    /// cap; lowers the cap with `lower`; closes every activity of the lowest-numbered stripes,
    /// whole stripes at a time until the count is below the new cap, emptying stripes that a
    /// plain respread would give room; then races 40 requests: exactly enough to reach the new
    /// cap may open.
    private func lowerCapAndRace(
        _ fixture: StoreFixture,
        expectedOpen: Int,
        global: Bool = false,
        lower: @escaping @Sendable (EventStore) async throws -> Void
    ) async throws {
        let opened = expectedOpen * 2
        try await fixture.withStore { store in
            for index in 0..<opened {
                let result = try await store.execute(requestCommand(), on: fixture.stream("o\(index)"), at: fixture.now)
                #expect(result.accepted != nil)
            }
            try await lower(store)
        }
        // Which stripes requests take is random: the emptied stripes are chosen from where the
        // activities went.
        let byStripe: [Int: [String]] = try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                let rows = try connection.query(
                    "SELECT activity_id::text, app_stripe::integer, global_stripe::integer FROM activities"
                )
                return try Dictionary(grouping: rows.map { (try $0.decode(global ? 2 : 1), try $0.decode(0)) }) {
                    (stripe: Int, _: String) in stripe
                }
                .mapValues { $0.map(\.1) }
            }
        }
        var emptied: [String] = []
        for stripe in byStripe.keys.sorted() where emptied.count <= opened - expectedOpen {
            emptied += byStripe[stripe]!
        }
        #expect(emptied.count > opened - expectedOpen, "the closings must leave room under the new cap")
        try await fixture.withStore { store in
            for activity in emptied {
                let closed = try await store.execute(
                    .end(.init(dismissal: .immediate)),
                    on: fixture.stream(activity),
                    at: fixture.now
                )
                #expect(closed.accepted != nil)
            }
        }
        let results = try await race(40, fixture) { (requestCommand(), fixture.stream("late\($0)")) }
        let stillOpen = opened - emptied.count
        #expect(results.filter { $0.accepted != nil }.count == expectedOpen - stillOpen)
        #expect(try await openInProjection(fixture) == expectedOpen)
    }
}

import ActivityLifecycle
import EventStore
import Postgres
import PropertyBased
import PropertyChecks
import TestSupport
import Testing

/// `liveline_free_stripes` frees a batch's closings together; whatever the closings and the
/// excesses, it must leave the counts as closings one after the other would (`CapCounts.close`).
@Suite("A batch's closings freed together, against the same closings one after the other")
struct FreeStripesModelTests {
    static let apps = ["app-a", "app-b"]
    /// Per closing: its app, app stripe, global stripe, device (4: none) and how many other
    /// commands of the batch come before it.
    static let closings = zip(
        Gen.int(in: 0...1),
        Gen.int(in: 0...7),
        Gen.int(in: 0...15),
        Gen.int(in: 0...4),
        Gen.int(in: 0...2)
    )
    .array(of: 1...24)
    /// The apps' excesses and the service's.
    static let excesses = Gen.int(in: 0...8).array(of: 3...3)
    /// What each stripe and device holds beyond its closings, and each stripe's room.
    static let spares = Gen.int(in: 0...2).array(of: 72...72)

    @Test(
        "any closings, any excess: each stripe's count and share, each device and both excesses as one after the other"
    )
    func freedAsOneAfterTheOther() async throws {
        let database = try await TestDatabase.makeMigrated()
        try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            for app in Self.apps {
                try await store.createApp(AppID(rawValue: app)!, AppSettings(bundleID: "b"), by: .commandLine)
            }
            await checkProperty(count: 2_000, input: Self.closings, Self.excesses, Self.spares) {
                closings,
                excesses,
                spares in
                let holders = closings.map { app, appStripe, globalStripe, device, _ in
                    CapCounts.Holder(
                        app: Self.apps[app],
                        appStripe: appStripe,
                        globalStripe: globalStripe,
                        device: device < 4 ? "phone-\(device)" : nil
                    )
                }
                // The batch's commands: each closing, after as many others as it says.
                let commands: [CapCounts.Holder?] = zip(closings, holders).flatMap { closing, holder in
                    Array(repeating: nil, count: closing.4) + [holder]
                }
                let (before, after) = try await pool.withConnection { connection in
                    try connection.execute("BEGIN")
                    defer { _ = try? connection.execute("ROLLBACK") }
                    let before = try Self.setUp(holders, excesses: excesses, spares: spares, connection)
                    try connection.execute(
                        """
                        SELECT liveline_free_stripes(
                            \(PostgresArray(commands.indices.filter { commands[$0] != nil }.map { Int32($0 + 1) })),
                            \(PostgresArray(commands.map { $0?.app ?? Self.apps[0] })),
                            \(PostgresArray(commands.map { JSONB($0?.device.map { #"{"device_id":"\#($0)"}"# } ?? "{}") })),
                            \(PostgresArray(commands.map { Int32($0?.appStripe ?? 0) }))::smallint[],
                            \(PostgresArray(commands.map { Int32($0?.globalStripe ?? 0) }))::smallint[])
                        """
                    )
                    return (before, try CapCounts.read(connection).counts)
                }
                var expected = before
                for holder in holders { expected.close(holder) }
                #expect(after == expected, "closings \(closings), excesses \(excesses)")
            }
        }
    }

    /// Counts that the closings can be taken from: each stripe and device holds its closings and
    /// up to 2 more, each stripe has up to 2 of room; the apps' and the service's excesses.
    private static func setUp(
        _ holders: [CapCounts.Holder],
        excesses: [Int],
        spares: [Int],
        _ connection: Connection
    ) throws -> CapCounts {
        var counts = CapCounts()
        var spare = spares.makeIterator()
        for app in apps {
            for stripe in 0..<8 {
                let open = holders.filter { $0.app == app && $0.appStripe == stripe }.count + spare.next()!
                counts.app[CapCounts.AppStripe(app: app, stripe: stripe)] = CapCounts.Share(
                    open: open,
                    capacity: open + spare.next()!
                )
            }
            for device in (0..<4).map({ "phone-\($0)" }) {
                counts.devices[CapCounts.Device(app: app, device: device)] =
                    holders.filter { $0.app == app && $0.device == device }.count + spare.next()!
            }
        }
        for stripe in 0..<16 {
            let open = holders.filter { $0.globalStripe == stripe }.count + spare.next()!
            counts.global[stripe] = CapCounts.Share(open: open, capacity: open + spare.next()!)
        }
        counts.appExcess = [apps[0]: excesses[0], apps[1]: excesses[1]]
        counts.serviceExcess = excesses[2]
        for (stripe, share) in counts.app {
            try connection.execute(
                """
                UPDATE app_open_stripes SET open = \(share.open), capacity = \(share.capacity)
                WHERE app_id = \(stripe.app) AND stripe = \(stripe.stripe)
                """
            )
        }
        for (stripe, share) in counts.global {
            try connection.execute(
                "UPDATE global_open_stripes SET open = \(share.open), capacity = \(share.capacity) WHERE stripe = \(stripe)"
            )
        }
        for (device, open) in counts.devices {
            try connection.execute(
                """
                INSERT INTO device_open_counts (app_id, device_id, open) VALUES (\(device.app), \(device.device), \(open))
                """
            )
        }
        for (app, excess) in counts.appExcess {
            try connection.execute("UPDATE apps SET open_excess = \(excess) WHERE app_id = \(app)")
        }
        try connection.execute("UPDATE service_limits SET open_excess = \(counts.serviceExcess)")
        return counts
    }
}

import ActivityLifecycle
import CanonicalJSON
import EmbeddedPostgres
import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

/// An erasure is recorded first and its activities redacted a batch at a time: a process killed
/// between two batches leaves it half done, and the next server's maintenance finishes it.
@Suite("An erasure killed -9 half-way is finished by the next server", .serialized)
struct ErasureProcessTests {
    static let app = AppID(rawValue: "shop")!
    static let device = "rider-secret-phone"
    static let activities = 2_000

    @Test("liveline erase killed -9 between two batches; liveline serve finishes it; nothing of the device is left")
    func killedHalfWay() async throws {
        let database = try await TestDatabase.makeMigrated()
        try await TestDatabase.withPool(database, maximumConnections: 8) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            try await store.createApp(
                Self.app,
                AppSettings(bundleID: "com.example.shop", maxOpen: 100),
                by: .commandLine
            )
            // Eight at a time, so that the store batches them.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<8 {
                    group.addTask {
                        for index in stride(from: lane, to: Self.activities, by: 8) {
                            let stream = StreamID(app: Self.app, activity: ActivityID(rawValue: "ride-\(index)")!)
                            let request = Command.request(
                                .init(
                                    activityType: "Ride",
                                    content: ActivityContent(
                                        contentState: JSONObject(["rider": .string("Ada Lovelace")])
                                    ),
                                    deviceID: DeviceID(rawValue: Self.device)
                                )
                            )
                            _ = try await store.execute(request, on: stream, at: .now())
                            _ = try await store.execute(.end(.init(dismissal: .immediate)), on: stream, at: .now())
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        let eraser = try LivelineProcess.start(
            ["erase", Self.app.rawValue, "--device", Self.device],
            database: database
        )
        defer { eraser.killNow() }
        let progress: @Sendable () async throws -> (erased: Int64, finished: Bool)? = {
            try await TestDatabase.withPool(database, maximumConnections: 1) { pool in
                try await pool.withConnection { connection in
                    try connection.query("SELECT erased, finished_at IS NOT NULL AS finished FROM erasure_progress")
                        .single
                        .map { (try $0.decode("erased"), try $0.decode("finished")) }
                }
            }
        }
        var killedAt: Int64?
        for _ in 0..<2_000 {
            if let (erased, finished) = try await progress(), erased > 0 {
                eraser.killNow()
                if !finished { killedAt = erased }
                break
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        _ = try await eraser.finish()
        let left = try #require(killedAt, "the erasure finished before it could be killed half-way")
        #expect(left < Int64(Self.activities))
        // What the killed process erased stays erased; the rest waits for the next server.
        #expect(try await progress()?.erased ?? 0 >= left)

        let (server, _) = try await Loopback.startServer(["serve"], database: database)
        defer { server.terminate() }
        var finished = false
        for _ in 0..<600 where !finished {
            finished = try await progress()?.finished == true
            if !finished { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(finished, "the server did not finish the erasure within 30 s")
        #expect(try await progress()?.erased == Int64(Self.activities))
        let dump = try EmbeddedPostgres.dump(connectionString: database, options: ["--data-only"])
        #expect(!dump.contains(Self.device) && !dump.contains("Ada Lovelace"))
    }
}

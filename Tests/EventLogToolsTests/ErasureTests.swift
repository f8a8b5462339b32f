import ActivityLifecycle
import CanonicalJSON
import EmbeddedPostgres
import EventLogTools
import EventStore
import Postgres
import TestSupport
import Testing

/// Erasure of the live log (docs/decisions/0040): a device's activities and tokens, or one
/// activity, gone from every table — a text dump of the database holds none of their values —
/// while the log still verifies, replays and audits, and nobody else's rows change.
@Suite("Erasure: nothing of the person left in the database, the history still checks")
struct ErasureTests {
    static let app = AppID(rawValue: "shop")!
    static let device = "rider-secret-7"
    static let start = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)
    /// Values of the person, each of which must be gone.
    static let name = "Ada Lovelace"
    static let address = "12 Crescent Road"
    static let alertTitle = "Driver Zed is here"
    static let alertBody = "Plate KX-4411"
    static func pushToken(_ index: Int) -> String { "feedc0de\(index)" + String(repeating: "a", count: 55) }
    static let startToken = String(repeating: "abad1dea", count: 8)
    static let widgetToken = String(repeating: "0ddba11e", count: 8)
    static var personal: [String] {
        [name, address, alertTitle, alertBody, device, startToken, widgetToken] + (0..<3).map(pushToken)
    }

    static func stream(_ id: String) -> StreamID { StreamID(app: app, activity: ActivityID(rawValue: id)!) }

    static func at(_ seconds: Int64) -> Timestamp { start + .seconds(seconds) }

    /// The device's three activities, each requested (with an idempotency key), given a push
    /// token, updated with an alert and delivered to it (the row names the registration, as the
    /// delivery worker's do), one of them with its token declared dead; its
    /// push-to-start and widget tokens; another person's activity. Ended and dismissed when
    /// `dismissed`.
    static func recordPerson(_ store: EventStore, dismissed: Bool = true) async throws {
        try await store.createApp(app, AppSettings(bundleID: "com.example.shop"), by: .commandLine)
        for index in 0..<3 {
            let stream = stream("ride-\(index)")
            try await store.execute(
                .request(
                    .init(
                        activityType: "Ride",
                        attributes: JSONObject(["rider": .string(name)]),
                        content: ActivityContent(
                            contentState: JSONObject(["pickup": .string(address), "eta": .number(7)])
                        ),
                        deviceID: DeviceID(rawValue: device)
                    )
                ),
                on: stream,
                at: at(1),
                idempotency: IdempotencyKey(key: "ride-\(index)", requestDigest: Array(repeating: 1, count: 32))
            )
            let registered = try await store.execute(.registerPushToken(pushToken(index)), on: stream, at: at(2))
            guard case .accepted(_, let registrations) = registered.outcome, let registration = registrations.first
            else {
                Issue.record("the push token was refused")
                return
            }
            let update = try await store.execute(
                .update(
                    .init(
                        content: ActivityContent(
                            contentState: JSONObject(["pickup": .string(address), "eta": .number(2)])
                        ),
                        alert: Alert(title: alertTitle, body: alertBody)
                    )
                ),
                on: stream,
                at: at(3)
            )
            guard case .accepted(_, let events) = update.outcome, let event = events.first else {
                Issue.record("the update was refused")
                return
            }
            try await store.recordDeliveries(
                DeliveryWrites(
                    records: [
                        DeliveryRecord(
                            position: event.position,
                            stream: stream,
                            version: event.event.version,
                            outcome: index == 2 ? .tokenInvalidated : .delivered,
                            attempt: 1,
                            deviceToken: pushToken(index),
                            tokenPosition: registration.position,
                            status: index == 2 ? 410 : 200,
                            reason: index == 2 ? "Unregistered" : nil,
                            attemptedAt: at(4)
                        )
                    ],
                    invalidations: index == 2
                        ? [
                            TokenInvalidation(
                                stream: stream,
                                deviceToken: pushToken(index),
                                position: event.position,
                                status: 410,
                                reason: "Unregistered",
                                since: at(4)
                            )
                        ] : []
                ),
                cursors: [:],
                worker: "test"
            )
            if dismissed {
                try await store.execute(.end(.init(dismissal: .immediate)), on: stream, at: at(5))
                // Refused, and recorded so.
                let refused = try await store.execute(
                    .update(.init(content: ActivityContent(contentState: JSONObject(["eta": .number(1)])))),
                    on: stream,
                    at: at(6)
                )
                guard case .rejected = refused.outcome else {
                    Issue.record("an update of a dismissed activity was not refused")
                    return
                }
            }
        }
        let slot = PushToStartSlot(app: app, device: DeviceID(rawValue: device)!, activityType: "Ride")
        _ = try await store.registerPushToStartToken(startToken, for: slot)
        _ = try await store.registerReloadToken(
            widgetToken,
            widgets: [WidgetInfo(kind: "RideStatus", family: "systemSmall")],
            for: ReloadTokenSlot(app: app, device: DeviceID(rawValue: device)!, kind: .widgets)
        )
        try await store.execute(
            .request(
                .init(
                    activityType: "Ride",
                    attributes: JSONObject(["rider": .string("Grace Hopper")]),
                    content: ActivityContent(contentState: JSONObject(["pickup": .string("Other Person Stays")])),
                    deviceID: DeviceID(rawValue: "rider-other")
                )
            ),
            on: stream("other"),
            at: at(1)
        )
    }

    static func dump(_ database: String) throws -> String {
        try EmbeddedPostgres.dump(connectionString: database, options: ["--data-only"])
    }

    @Test("a device erased: no value of it in a dump of the database; verify, replay and audit still read the log")
    func deviceErased() async throws {
        let database = try await TestDatabase.makeMigrated()
        let erasure = try await TestDatabase.withPool(database, maximumConnections: 2) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            try await Self.recordPerson(store)
            let before = try Self.dump(database)
            #expect(Self.personal.allSatisfy { before.contains($0) })
            // Recorded; the process stops before erasing any activity.
            return try await store.requestErasure(
                .device(DeviceID(rawValue: Self.device)!),
                in: Self.app,
                by: .commandLine
            )
        }
        #expect(erasure.activities == 3 && erasure.erased == 0 && erasure.finishedAt == nil && erasure.activity == nil)
        try await TestDatabase.withPool(database, maximumConnections: 2) { pool in
            // Another process finishes it.
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            try await store.eraseWaitingActivities()
            let finished = try #require(try await store.erasure(erasure.id, in: Self.app))
            #expect(finished.erased == 3 && finished.finishedAt != nil)

            let dump = try Self.dump(database)
            for value in Self.personal {
                #expect(!dump.contains(value), "\(value) is still in the database")
            }
            #expect(
                dump.contains("Other Person Stays") && dump.contains("Grace Hopper") && dump.contains("rider-other")
            )

            let ride = Self.stream("ride-0")
            let activity = try #require(try await store.activity(ride))
            #expect(activity.activity.deviceID == finished.erasedDeviceID)
            #expect(activity.activity.pushToken == "erased" && activity.activity.state == .dismissed)
            #expect(
                activity.activity.content.contentState == JSONObject(["pickup": .string("•••"), "eta": .string("•••")])
            )
            #expect(try await store.erasures(of: [ride, Self.stream("other")]).mapValues(\.id) == [ride: erasure.id])

            let summary = try await LogVerifier(store: store, now: Self.at(60)).verify()
            #expect(summary.isClean, "\(summary.findings)")
            #expect(summary.erasedStreams == 3 && summary.streams == 4)
            let replay = try await ProjectionReplay(store: store).run(swap: false)
            #expect(replay.isConsistent, "\(replay)")
            let audit = try await store.audit(of: ride, archives: nil)
            #expect(
                audit.entries.map(\.type).prefix(4) == [
                    "activity.requested", "activity.push_token_changed", "activity.updated", "activity.ended",
                ]
            )
            #expect(audit.entries.contains { $0.summary.contains(#"alert "•••""#) })
            #expect(audit.entries.dropLast().last?.type == "refused update")
            #expect(audit.entries.last?.type == "erased")
            #expect(audit.entries.last?.summary.hasPrefix("erasure \(erasure.id), asked by command_line") == true)
        }
    }

    @Test("one activity erased: the device's other activities and tokens stay")
    func activityErased() async throws {
        try await AuditTimelineTests.withStore { store, _ in
            try await Self.recordPerson(store)
            let erasure = try await store.requestErasure(
                .activity(ActivityID(rawValue: "ride-1")!),
                in: Self.app,
                by: .appAPI
            )
            try await store.eraseWaitingActivities()
            #expect(try await store.erasure(erasure.id)?.finishedAt != nil)
            #expect(try await store.activity(Self.stream("ride-1"))?.activity.pushToken == "erased")
            #expect(try await store.activity(Self.stream("ride-0"))?.activity.pushToken == Self.pushToken(0))
            #expect(try await store.activity(Self.stream("ride-0"))?.activity.deviceID?.rawValue == Self.device)
            let slot = PushToStartSlot(app: Self.app, device: DeviceID(rawValue: Self.device)!, activityType: "Ride")
            #expect(try await store.pushToStartToken(of: slot)?.current?.token == Self.startToken)
        }
    }

    @Test(
        "refused: an activity not yet dismissed, a device nothing names; nothing is recorded. An activity nothing live names is erased all the same"
    )
    func refusals() async throws {
        try await AuditTimelineTests.withStore { store, pool in
            try await Self.recordPerson(store, dismissed: false)
            let device = DeviceID(rawValue: Self.device)!
            await #expect(
                throws: ErasureRefusal.notDismissed(["ride-0", "ride-1", "ride-2"].map { ActivityID(rawValue: $0)! })
            ) {
                try await store.requestErasure(.device(device), in: Self.app, by: .appAPI)
            }
            await #expect(throws: ErasureRefusal.deviceNotFound(DeviceID(rawValue: "nobody")!)) {
                try await store.requestErasure(.device(DeviceID(rawValue: "nobody")!), in: Self.app, by: .appAPI)
            }
            let erasures: Int64 = try await pool.withConnection {
                try $0.query("SELECT count(*) AS n FROM erasures").single!.decode("n")
            }
            #expect(erasures == 0)
            // Archives may hold it: nothing in the database says which activities they hold.
            let archived = try await store.requestErasure(
                .activity(ActivityID(rawValue: "nope")!),
                in: Self.app,
                by: .appAPI
            )
            #expect(archived.activities == 1)
            try await store.eraseWaitingActivities()
            #expect(try await store.erasure(archived.id)?.finishedAt != nil)
        }
    }

    @Test("the guard: the log changes only into its redaction, only for an erasure's pending activity")
    func guardedRewrite() async throws {
        try await AuditTimelineTests.withStore { store, pool in
            try await Self.recordPerson(store)
            func refused(_ sql: String) async -> Bool {
                do {
                    try await pool.withConnection { connection in
                        try connection.transaction { try $0.executeScript(sql) }
                    }
                    return false
                } catch let error as PostgresError {
                    return error.sqlState?.rawValue == "42501"
                } catch {
                    return false
                }
            }
            #expect(await refused("UPDATE events SET data = data || '{\"x\":1}' WHERE activity_id = 'ride-0'"))
            #expect(await refused("UPDATE deliveries SET device_token = NULL"))
            // An erasure of ride-1 lets nothing else through: not ride-0, not another change of ride-1.
            let erasure = try await store.requestErasure(
                .activity(ActivityID(rawValue: "ride-1")!),
                in: Self.app,
                by: .appAPI
            )
            let named = "SELECT set_config('liveline.erasure', '\(erasure.id)', true);"
            #expect(
                await refused(
                    named
                        + "UPDATE events SET data = liveline_redacted_event_data(type, data, gen_random_uuid()) WHERE activity_id = 'ride-0'"
                )
            )
            #expect(await refused(named + "UPDATE events SET data = '{}' WHERE activity_id = 'ride-1'"))
            #expect(
                await refused(
                    named + "UPDATE events SET occurred_at = occurred_at + interval '1s' WHERE activity_id = 'ride-1'"
                )
            )
            #expect(
                await refused("UPDATE events SET data = liveline_redacted_event_data(type, data, gen_random_uuid())")
            )
            try await store.eraseWaitingActivities()
            // Finished: its name opens nothing any more.
            #expect(await refused(named + "UPDATE deliveries SET device_token = NULL"))
        }
    }
}

import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventStore
import LocalAPNs
import Postgres
import TestSupport
import Testing

/// Widget and control reloads sent by the reload workers to the local APNs, which checks them
/// as APNs would.
@Suite(
    "Reload workers: widget and control reloads reach APNs as APNs takes them, paced, every outcome kept",
    .serialized
)
struct ReloadWorkerTests {
    static let widget = WidgetInfo(kind: "Score", family: "systemSmall")

    static func registerWidgets(
        _ devices: Range<Int>,
        _ fixture: DeliveryFixture,
        _ store: EventStore
    ) async throws {
        for index in devices {
            _ = try await store.registerReloadToken(
                DeliveryFixture.token(index),
                widgets: [widget],
                for: ReloadTokenSlot(app: fixture.app, device: DeviceID(rawValue: "phone-\(index)")!, kind: .widgets)
            )
        }
    }

    static func status(
        _ reload: AcceptedReload,
        _ fixture: DeliveryFixture,
        _ store: EventStore
    ) async throws
        -> [String: Int]
    {
        try await store.reloadStatus(reload.id, of: fixture.app)?.devices ?? [:]
    }

    @Test("a widget reload to every device: each device gets one, with the widgets topic, push type and body")
    func widgetsEverywhere() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await Self.registerWidgets(1..<61, fixture, store)
            try await fixture.withReloadWorkers(2) {
                let reload = try await store.requestReload(
                    ReloadTarget(kind: .widgets, widgetKinds: ["Score"]),
                    for: fixture.app,
                    from: .api(nil)
                )
                #expect(reload.targets == 60)
                try await fixture.eventually("every device has its reload recorded") {
                    try await Self.status(reload, fixture, store) == ["delivered": 60]
                }
                #expect(try await store.reloadStatus(reload.id, of: fixture.app)?.fannedOut == true)
            }
            let received = fixture.server.received
            #expect(received.count == 60 && Set(received.map(\.deviceToken)).count == 60)
            #expect(
                received.allSatisfy {
                    $0.pushType == "widgets" && $0.topic == DeliveryFixture.bundleID + ".push-type.widgets"
                }
            )
            #expect(
                received.allSatisfy { $0.priority == 5 && $0.body == Array(#"{"aps":{"content-changed":true}}"#.utf8) }
            )
        }
    }

    @Test("a control reload to named devices goes at priority 10 to each device's token for the kind")
    func controlsNamed() async throws {
        try await DeliveryFixture.run { fixture, store in
            for index in 1...3 {
                _ = try await store.registerReloadToken(
                    DeliveryFixture.token(100 + index),
                    widgets: [],
                    for: ReloadTokenSlot(
                        app: fixture.app,
                        device: DeviceID(rawValue: "phone-\(index)")!,
                        kind: .control("Door")
                    )
                )
            }
            try await fixture.withReloadWorkers {
                let reload = try await store.requestReload(
                    ReloadTarget(
                        kind: .control("Door"),
                        devices: [DeviceID(rawValue: "phone-1")!, DeviceID(rawValue: "phone-3")!]
                    ),
                    for: fixture.app,
                    from: .api(nil)
                )
                try await fixture.eventually("both controls reloaded") {
                    try await Self.status(reload, fixture, store) == ["delivered": 2]
                }
            }
            let received = fixture.server.received
            #expect(Set(received.map(\.deviceToken)) == [DeliveryFixture.token(101), DeliveryFixture.token(103)])
            #expect(received.allSatisfy { $0.pushType == "controls" && $0.priority == 10 })
        }
    }

    @Test("a second request within the interval is coalesced, and its reload goes when the interval ends")
    func coalescing() async throws {
        try await DeliveryFixture.run { fixture, store in
            var settings = try #require(try await store.appSettings(fixture.app))
            settings.widgetReloadIntervalSeconds = 5
            try await store.updateApp(fixture.app, settings, by: .commandLine)
            try await Self.registerWidgets(1..<4, fixture, store)
            try await fixture.withReloadWorkers {
                let first = try await store.requestReload(
                    ReloadTarget(kind: .widgets),
                    for: fixture.app,
                    from: .api(nil)
                )
                try await fixture.eventually("the first reload delivered") {
                    try await Self.status(first, fixture, store) == ["delivered": 3]
                }
                let second = try await store.requestReload(
                    ReloadTarget(kind: .widgets),
                    for: fixture.app,
                    from: .api(nil)
                )
                let third = try await store.requestReload(
                    ReloadTarget(kind: .widgets),
                    for: fixture.app,
                    from: .api(nil)
                )
                try await fixture.eventually("the later requests coalesced") {
                    try await Self.status(third, fixture, store) == ["coalesced": 3]
                }
                #expect(fixture.server.received.count == 3)
                try await fixture.eventually("the newest request's reload sent when the interval ended") {
                    try await Self.status(third, fixture, store) == ["delivered": 3]
                }
                #expect(try await Self.status(second, fixture, store) == ["coalesced": 3])
            }
            let received = fixture.server.received
            #expect(received.count == 6)
            for token in Set(received.map(\.deviceToken)) {
                #expect(fixture.server.received(by: token).count == 2)
            }
        }
    }

    @Test("410 invalidates the token; a wrong-topic answer fails the reload but keeps the token")
    func answers() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await Self.registerWidgets(1..<3, fixture, store)
            fixture.server.unregister(deviceToken: DeliveryFixture.token(1), at: 1_800_000_000_000)
            fixture.server.fail(.status(400, reason: "DeviceTokenNotForTopic"), deviceToken: DeliveryFixture.token(2))
            try await fixture.withReloadWorkers {
                let reload = try await store.requestReload(
                    ReloadTarget(kind: .widgets),
                    for: fixture.app,
                    from: .api(nil)
                )
                try await fixture.eventually("both answered") {
                    try await Self.status(reload, fixture, store) == ["token_invalidated": 1, "failed": 1]
                }
            }
            let dead = ReloadTokenSlot(app: fixture.app, device: DeviceID(rawValue: "phone-1")!, kind: .widgets)
            let kept = ReloadTokenSlot(app: fixture.app, device: DeviceID(rawValue: "phone-2")!, kind: .widgets)
            #expect(try await store.reloadToken(of: dead)?.current == nil)
            #expect(try await store.reloadToken(of: dead)?.changes.last?.reason == "Unregistered")
            #expect(try await store.reloadToken(of: kept)?.current?.token == DeliveryFixture.token(2))
        }
    }

    @Test("a device's pushes: its activities' and its reloads, newest first")
    func devicePushes() async throws {
        try await DeliveryFixture.run { fixture, store in
            let device = DeviceID(rawValue: "phone-1")!
            let stream = fixture.stream("order-1")
            try await fixture.execute(
                .request(.init(activityType: "Game", content: ActivityContent(contentState: .empty), deviceID: device)),
                on: stream,
                in: store
            )
            try await fixture.execute(.registerPushToken(DeliveryFixture.token(7)), on: stream, in: store)
            try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
            // Another device's activity and reload are not this device's.
            let other = try await fixture.activityWithToken("order-2", token: DeliveryFixture.token(8), in: store)
            try await fixture.execute(DeliveryFixture.update(1), on: other, in: store)
            try await Self.registerWidgets(1..<3, fixture, store)
            try await fixture.withWorkers {
                try await fixture.eventually("the update delivered") {
                    try await store.deliveries(of: stream).first?.outcome == .delivered
                }
                try await fixture.withReloadWorkers {
                    let reload = try await store.requestReload(
                        ReloadTarget(kind: .widgets),
                        for: fixture.app,
                        from: .api(nil)
                    )
                    try await fixture.eventually("the reloads delivered") {
                        try await Self.status(reload, fixture, store) == ["delivered": 2]
                    }
                }
            }
            let pushes = try await store.pushes(to: device, of: fixture.app)
            #expect(pushes.map(\.outcome) == ["delivered", "delivered"])
            guard case .reload(_, .widgets) = pushes.first?.source,
                case .activity(stream.activity, version: 3) = pushes.last?.source
            else {
                Issue.record("not the reload then the update: \(pushes.map(\.source))")
                return
            }
            #expect(
                pushes.first?.deviceToken == DeliveryFixture.token(1)
                    && pushes.last?.deviceToken == DeliveryFixture.token(7)
            )
            #expect(pushes.allSatisfy { $0.status == 200 && $0.attempt == 1 })
            #expect(try await store.pushes(to: device, of: fixture.app, limit: 1).count == 1)
        }
    }

    @Test("refused credentials suspend the app's reloads; new credentials resume them at once")
    func suspension() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await Self.registerWidgets(1..<3, fixture, store)
            fixture.server.fail(.status(403, reason: "InvalidProviderToken"), times: 100)
            try await fixture.withReloadWorkers {
                let reload = try await store.requestReload(
                    ReloadTarget(kind: .widgets),
                    for: fixture.app,
                    from: .api(nil)
                )
                try await fixture.eventually("held") {
                    (try await Self.status(reload, fixture, store)["app_suspended"] ?? 0) >= 1
                }
                fixture.server.clearFailures()
                try await fixture.setCredentials(fixture.key, in: store)
                try await fixture.eventually("resumed and delivered") {
                    try await Self.status(reload, fixture, store) == ["delivered": 2]
                }
            }
        }
    }

    @Test(
        "the database's sessions killed again and again during fan-outs: every request reaches every device, sent or carried by the next"
    )
    func sessionsKilled() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await Self.registerWidgets(1..<201, fixture, store)
            var settings = try #require(try await store.appSettings(fixture.app))
            settings.widgetReloadIntervalSeconds = 0
            try await store.updateApp(fixture.app, settings, by: .commandLine)
            try await fixture.withReloadWorkers(2) {
                let reloads = try await TestDatabase.withPool(fixture.database, maximumConnections: 1) { killer in
                    var reloads: [AcceptedReload] = []
                    for _ in 0..<3 {
                        reloads.append(
                            try await store.requestReload(
                                ReloadTarget(kind: .widgets, widgetKinds: ["Score"]),
                                for: fixture.app,
                                from: .api(nil)
                            )
                        )
                        // Every other session of this test's database, the workers' among them, dies mid-flight.
                        for _ in 0..<5 {
                            try await Task.sleep(for: .milliseconds(15))
                            try await killer.withConnection {
                                try $0.execute(
                                    """
                                    SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                                    WHERE datname = current_database() AND pid <> pg_backend_pid()
                                    """
                                )
                            }
                        }
                    }
                    return reloads
                }
                // The last request reaches every device; an earlier one that found a device's reload
                // still on its way (the kills slow the records) rides on the next reload sent.
                try await fixture.eventually("the last request reaches every device") {
                    (try? await Self.status(reloads.last!, fixture, store)) == ["delivered": 200]
                }
                for reload in reloads.dropLast() {
                    let devices = try await Self.status(reload, fixture, store)
                    #expect(devices.values.reduce(0, +) == 200, "\(devices)")
                    #expect(Set(devices.keys).isSubset(of: ["delivered", "coalesced"]), "\(devices)")
                }
            }
            let byDevice = Dictionary(grouping: fixture.server.received, by: \.deviceToken)
            #expect(byDevice.count == 200)
            // At most a reload per request, and one more per request for an answer whose record
            // died with its session.
            let most = byDevice.values.map(\.count).max() ?? 0
            #expect(most <= 6, "\(most)")
        }
    }
}

import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventLogTools
import EventStore
import LocalAPNs
import Testing

/// The first way to reload widgets (#57): an update or end of an activity asks that its device
/// reload them, and the delivery worker makes the request once the Live Activity push is settled.
@Suite("Widget reloads an activity's update or end asked for", .serialized)
struct ActivityReloadTests {
    static let widget = WidgetInfo(kind: "OrderStatus", family: "systemSmall")
    static let device = DeviceID(rawValue: "phone-1")!

    /// An activity of the device, with the device's widget token registered (and, if given, the
    /// activity's push token).
    static func activity(
        _ id: String,
        pushToken: String?,
        _ fixture: DeliveryFixture,
        _ store: EventStore
    ) async throws -> StreamID {
        _ = try await store.registerReloadToken(
            DeliveryFixture.token(900),
            widgets: [widget],
            for: ReloadTokenSlot(app: fixture.app, device: device, kind: .widgets)
        )
        let stream = fixture.stream(id)
        try await fixture.execute(
            .request(.init(activityType: "Order", content: ActivityContent(contentState: .empty), deviceID: device)),
            on: stream,
            in: store
        )
        if let pushToken { try await fixture.execute(.registerPushToken(pushToken), on: stream, in: store) }
        return stream
    }

    static func update(_ step: Int, reload: WidgetReload?) -> Command {
        .update(
            .init(
                content: ActivityContent(contentState: JSONObject(["step": .number(JSONNumber(step))])),
                priority: .low,
                widgetReload: reload
            )
        )
    }

    @Test(
        "an update asking for a widget reload: the device's widgets reload after its Live Activity push, once; audit shows it"
    )
    func afterThePush() async throws {
        try await DeliveryFixture.run { fixture, store in
            let pushToken = DeliveryFixture.token(1)
            let stream = try await Self.activity("order-1", pushToken: pushToken, fixture, store)
            try await fixture.withWorkers {
                try await fixture.withReloadWorkers {
                    try await fixture.execute(Self.update(1, reload: WidgetReload()), on: stream, in: store)
                    try await fixture.eventually("the reload the update asked for is delivered") {
                        try await store.reloads(askedBy: stream).first?.devices == ["delivered": 1]
                    }
                }
            }
            let received = fixture.server.received
            let push = try #require(received.firstIndex { $0.deviceToken == pushToken })
            let reload = try #require(received.firstIndex { $0.deviceToken == DeliveryFixture.token(900) })
            #expect(push < reload && received[reload].pushType == "widgets")
            let asked = try await store.reloads(askedBy: stream)
            #expect(asked.count == 1 && asked[0].version == 3 && asked[0].activity == stream.activity)
            #expect(asked[0].reload.target == ReloadTarget(kind: .widgets, devices: [Self.device]))
            #expect(asked[0].reload.requestedAt >= (try await store.deliveries(of: stream)).last!.attemptedAt)

            let audit = try await store.audit(of: stream, archives: nil)
            let entry = try #require(audit.entries.first { $0.version == 3 })
            #expect(entry.summary.contains("widget reload asked"))
            #expect(entry.reload?.reloadId == asked[0].reload.id && entry.reload?.devices == ["delivered": 1])
            #expect(AuditReport.table(audit.entries).contains("widget reload"))
        }
    }

    @Test(
        "with no push token yet, nothing goes to the activity: its update's reload goes at once; an end's kinds filter"
    )
    func withoutAPush() async throws {
        try await DeliveryFixture.run { fixture, store in
            let stream = try await Self.activity("order-2", pushToken: nil, fixture, store)
            try await fixture.withWorkers {
                try await fixture.withReloadWorkers {
                    try await fixture.execute(Self.update(1, reload: WidgetReload()), on: stream, in: store)
                    try await fixture.eventually("the reload goes though the push waits for a token") {
                        try await store.reloads(askedBy: stream).first?.devices == ["delivered": 1]
                    }
                    // The device listed no widget of this kind: the request targets none.
                    try await fixture.execute(
                        .end(.init(widgetReload: WidgetReload(widgetKinds: ["Standings"]))),
                        on: stream,
                        in: store
                    )
                    try await fixture.eventually("the end's reload is asked") {
                        try await store.reloads(askedBy: stream).count == 2
                    }
                }
            }
            #expect(try await store.deliveries(of: stream).allSatisfy { $0.outcome == .awaitingToken })
            let asked = try await store.reloads(askedBy: stream)
            #expect(asked.map(\.reload.targets) == [1, 0] && asked.map(\.version) == [2, 3])
            #expect(fixture.server.received.map(\.pushType) == ["widgets"])
        }
    }

    @Test("settled again by a worker that took over, an event's reload is asked once")
    func askedOnce() async throws {
        try await DeliveryFixture.run { fixture, store in
            let stream = try await Self.activity("order-3", pushToken: DeliveryFixture.token(3), fixture, store)
            try await fixture.execute(Self.update(1, reload: WidgetReload()), on: stream, in: store)
            let ask = ActivityReload(stream: stream, version: 3, device: Self.device, widgetKinds: nil)
            let writes = DeliveryWrites(reloads: [ask])
            try await store.recordDeliveries(writes, cursors: [:], worker: "first")
            try await store.recordDeliveries(writes, cursors: [:], worker: "second")
            let asked = try await store.reloads(askedBy: stream)
            #expect(asked.count == 1 && asked[0].reload.targets == 1)
        }
    }
}

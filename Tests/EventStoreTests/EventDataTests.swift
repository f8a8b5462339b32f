import ActivityLifecycle
import CanonicalJSON
import Postgres
import TestSupport
import Testing

@testable import EventStore

@Suite("Event data in the log: written and read back member for member")
struct EventDataTests {
    /// Commands that between them set every optional member of every event type's `data`.
    static func commands(at start: Timestamp) -> [(String, Command)] {
        let content = ActivityContent(
            contentState: JSONObject([
                "stage": .string("out \"for\" delivery\n"), "eta": .number(12.5),
                "flags": .array([.bool(true), .null, .number(-3)]), "courier": .object(["name": .string("Sam")]),
            ]),
            staleDate: start + .seconds(3_600),
            relevanceScore: RelevanceScore(4)
        )
        return [
            (
                "scheduled",
                .request(
                    .init(
                        activityType: "delivery",
                        attributes: JSONObject(["order": .string("A-1")]),
                        content: content,
                        startDate: start + .seconds(60),
                        pushType: .channel,
                        style: .transient,
                        deviceID: DeviceID(rawValue: "phone-1"),
                        timestamp: start - .seconds(1),
                        remoteStart: RemoteStart(
                            pushToStartToken: "c0ffee01",
                            alert: Alert(title: "Order placed", body: "We'll keep you posted", sound: "ding.caf")
                        )
                    )
                )
            ),
            ("scheduled", .registerPushToken("80f1a9c3")),
            (
                "live",
                .request(
                    .init(
                        activityType: "delivery",
                        content: ActivityContent(contentState: .empty),
                        deviceID: DeviceID(rawValue: "phone-2")
                    )
                )
            ),
            (
                "live",
                .update(
                    .init(
                        content: content,
                        alert: Alert(title: "Nearby", body: "Two stops away", sound: "chime.caf"),
                        priority: .high,
                        timestamp: start,
                        widgetReload: WidgetReload(widgetKinds: ["OrderStatus", "Courier"])
                    )
                )
            ),
            (
                "live",
                .update(.init(content: ActivityContent(contentState: .empty), alert: Alert(title: "t", body: "b")))
            ),
            (
                "live",
                .end(
                    .init(
                        content: content,
                        dismissal: .after(start + .seconds(600)),
                        timestamp: start,
                        widgetReload: WidgetReload()
                    )
                )
            ),
            ("live", .dismiss(.userRemoved)),
        ]
    }

    @Test("every member of every event type reads back as it was appended")
    func roundTrip() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            var appended: [StreamID: [ActivityEvent]] = [:]
            for (name, command) in Self.commands(at: fixture.now) {
                let result = try await store.execute(command, on: fixture.stream(name), at: fixture.now)
                guard case .accepted(_, let events) = result.outcome else {
                    Issue.record("\(name): \(result.outcome)")
                    continue
                }
                appended[fixture.stream(name), default: []] += events.map(\.event)
            }
            let types = Set(appended.values.joined().map(\.type))
            #expect(types.isSuperset(of: [.requested, .updated, .ended, .dismissed, .pushTokenChanged]))
            for (stream, events) in appended {
                #expect(try await store.events(of: stream).map(\.event) == events)
            }
        }
    }

    @Test("an update's `downgraded` is written only when true; absent or false (as written before) reads as false")
    func downgradedOnlyWhenTrue() async throws {
        let fixture = try await StoreFixture.make(
            settings: AppSettings(bundleID: "com.example.delivery", priorityBudgetPerHour: 1)
        )
        try await fixture.withStore { store in
            _ = try await store.execute(requestCommand(), on: fixture.stream("a"), at: fixture.now)
            for step in 1...2 {
                _ = try await store.execute(
                    updateCommand(step, priority: nil),
                    on: fixture.stream("a"),
                    at: fixture.now
                )
            }
            let members: [String] = try await store.pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT coalesce(data ->> 'downgraded', 'absent') FROM events
                    WHERE activity_id = 'a' AND type = 'activity.updated' ORDER BY version
                    """
                ).map { try $0.decode(0) }
            }
            #expect(members == ["absent", "true"])
            for (activity, member) in [("b", #", "downgraded": false"#), ("c", "")] {
                try await store.pool.withConnection { connection in
                    try connection.execute(
                        """
                        INSERT INTO events (position, app_id, activity_id, version, type, data, caused_by, occurred_at)
                        VALUES (pg_current_xact_id()::text::bigint * 65536, \(fixture.app.rawValue), \(activity), 1,
                                'activity.updated', \(#"{"content": {"contentState": {}}, "priority": 5"# + member + "}")::jsonb,
                                'app', now())
                        """
                    )
                }
                let events = try await store.events(of: fixture.stream(activity)).map(\.event)
                guard case .updated(let updated) = events.first?.payload else {
                    Issue.record("\(activity): \(events)")
                    continue
                }
                #expect(!updated.downgraded, "\(activity)")
            }
        }
    }

    @Test("data with a member missing or of the wrong kind, or an unknown type, is refused, naming it")
    func strictness() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let updated = "activity.updated"
            for (activity, type, data, member) in [
                ("a", "activity.dismissed", #"{"reason": "sideways"}"#, "data.reason is not a valid DismissalReason"),
                ("b", "activity.dismissed", #"{}"#, "data.reason is missing"),
                ("c", "activity.dismissed", #"{"reason": 3}"#, "data.reason is not a string"),
                ("d", "activity.dismissed", #"{"reason": null}"#, "data.reason is missing"),
                (
                    "f", updated, #"{"content": "x", "priority": 5, "downgraded": false}"#,
                    "data.content is not an object"
                ),
                (
                    "g", updated, #"{"content": {"contentState": {}}, "priority": 7, "downgraded": false}"#,
                    "data.priority is not a valid Priority"
                ),
                (
                    "h", updated, #"{"content": {"contentState": []}, "priority": 5, "downgraded": false}"#,
                    "data.content.contentState is not an object"
                ),
                (
                    "k", updated, #"{"content": {"contentState": {}}, "priority": 5, "downgraded": "yes"}"#,
                    "data.downgraded is not true or false"
                ),
                (
                    "l", updated,
                    #"{"content": {"contentState": {}}, "priority": 5, "widgetReload": {"widgetKinds": "A"}}"#,
                    "data.widgetReload.widgetKinds is not an array of strings"
                ),
                (
                    "m", updated, #"{"content": {"contentState": {}}, "priority": 5, "widgetReload": []}"#,
                    "data.widgetReload is not an object"
                ),
                ("i", "activity.bogus", #"{}"#, "unknown event type activity.bogus"),
                ("j", "activity.update", #"{}"#, "unknown event type activity.update"),
            ] {
                try await store.pool.withConnection { connection in
                    try connection.execute(
                        """
                        INSERT INTO events (position, app_id, activity_id, version, type, data, caused_by, occurred_at)
                        VALUES (pg_current_xact_id()::text::bigint * 65536, \(fixture.app.rawValue), \(activity), 1,
                                \(type), \(data)::jsonb, 'system', now())
                        """
                    )
                }
                let error = await #expect(throws: EventStoreError.self) {
                    try await store.events(of: fixture.stream(activity))
                }
                #expect("\(error.map(String.init(describing:)) ?? "")".contains(member), "\(activity)")
            }
        }
    }
}

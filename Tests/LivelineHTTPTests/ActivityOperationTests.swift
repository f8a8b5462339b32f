import ActivityLifecycle
import CanonicalJSON
import EventLogTools
import EventStore
import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import Testing

@Suite("Activity operations over real HTTP, checked against openapi.yaml")
struct ActivityOperationTests {
    static let content = JSONObject(["stage": .string("packed"), "eta": .string("12:30")])

    @Test("One activity's whole life: request, update with an alert, stale, end, dismissed by the device")
    func wholeLife() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let created = try await app.client.requestActivity(
                body: .json(
                    .init(
                        activityId: activityID("order-1"),
                        activityType: "Delivery",
                        attributes: JSONObject(["order": .string("A1")]),
                        contentState: Self.content,
                        deviceId: DeviceID(rawValue: "phone-1")
                    )
                )
            ).created
            #expect(created.headers.eTag == "\"1\"")
            #expect(created.headers.location == "/v1/activities/order-1")
            #expect(try created.body.json.state == .active)
            #expect(try created.body.json.nextDeadline?.kind == .lifetime)

            let path = Operations.UpdateActivity.Input.Path(activityId: "order-1")
            let updated = try await app.client.updateActivity(
                path: path,
                body: .json(
                    .init(
                        contentState: JSONObject(["stage": .string("out for delivery")]),
                        alert: .init(title: "On its way", body: "Your order left the depot", sound: "default")
                    )
                )
            ).ok
            #expect(updated.headers.eTag == "\"2\"")
            #expect(try updated.body.json.contentState == JSONObject(["stage": .string("out for delivery")]))

            // A stale date not after now lands the update directly in `stale`.
            let stale = try await app.client.updateActivity(
                path: path,
                body: .json(.init(contentState: Self.content, staleDate: api.clock.now - .seconds(1)))
            ).ok.body.json
            #expect(stale.state == .stale)
            #expect(stale.version == 4)

            let ended = try await app.client.endActivity(
                path: .init(activityId: "order-1"),
                body: .json(
                    .init(
                        contentState: JSONObject(["stage": .string("delivered")]),
                        dismissal: ._default(.init(policy: ._default))
                    )
                )
            ).ok.body.json
            #expect(ended.state == .ended)
            #expect(ended.dismissalDate == ended.endedAt.map { $0 + .seconds(4 * 3600) })
            #expect(ended.nextDeadline?.kind == .dismissal)

            let dismissed = try await app.client.reportDismissal(path: .init(activityId: "order-1")).ok.body.json
            #expect(dismissed.state == .dismissed)
            #expect(dismissed.nextDeadline == nil)

            let events = try await app.client.listActivityEvents(path: .init(activityId: "order-1")).ok.body.json.events
            #expect(
                events.map(\._type) == [
                    .requested, .updated, .updated, .becameStale, .ended, .dismissed,
                ]
            )
            #expect(events.map(\.version) == Array(1...6))
            #expect(events.last?.cause == .device)
            #expect(
                events[1].data.members["alert"]
                    == .object([
                        "title": .string("On its way"), "body": .string("Your order left the depot"),
                        "sound": .string("default"),
                    ])
            )

            let fetched = try await app.client.getActivity(path: .init(activityId: "order-1")).ok
            #expect(fetched.headers.eTag == "\"6\"")
            // GET adds the token lineage to what the dismissal answered: none, no token was registered.
            var read = try fetched.body.json
            #expect(read.tokens == [])
            read.tokens = nil
            #expect(read == dismissed)

            let replay = try await ProjectionReplay(store: api.store).run(swap: false)
            #expect(replay.isConsistent, "the projection the API wrote is the fold of the log it wrote")
        }
    }

    @Test("A request without an id gets a generated UUID; a future startDate makes it pending")
    func generatedIDAndScheduledStart() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let activity = try await app.client.requestActivity(
                body: .json(
                    .init(activityType: "Match", contentState: .empty, startDate: api.clock.now + .seconds(600))
                )
            ).created.body.json
            #expect(UUID(uuidString: activity.activityId.rawValue) != nil)
            #expect(activity.state == .pending)
            #expect(activity.nextDeadline?.kind == .start)
        }
    }

    @Test("Content keeps 64-bit integers exactly, in the activity and in its events")
    func exactIntegers() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let sent = #"{"orderId": 9007199254740993, "low": -9223372036854775808, "ratio": 2.50, "count": 3.0}"#
            let kept = #"{"count":3,"low":-9223372036854775808,"orderId":9007199254740993,"ratio":2.5}"#
            let created = try await api.send(
                .post,
                "/v1/activities",
                key: app.key.key,
                body: Array(#"{"activityId": "n1", "activityType": "T", "contentState": \#(sent)}"#.utf8)
            )
            #expect(created.status == .created)
            for path in ["/v1/activities/n1", "/v1/activities/n1/events"] {
                let read = try await api.send(.get, path, key: app.key.key)
                #expect(String(buffer: read.body).contains(#""contentState":\#(kept)"#), "\(path)")
            }
        }
    }

    @Test("ETag and Location are sent as HTTP writes them, not percent-encoded as URI parts")
    func plainHeaders() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let created = try await api.send(
                .post,
                "/v1/activities",
                key: app.key.key,
                body: Array(#"{"activityId": "order:7_a.b-c", "activityType": "T", "contentState": {}}"#.utf8)
            )
            #expect(created.status == .created)
            #expect(created.headers[.eTag] == #""1""#)
            #expect(created.headers[.location] == "/v1/activities/order:7_a.b-c")
            let updated = try await api.send(
                .post,
                "/v1/activities/order:7_a.b-c/updates",
                key: app.key.key,
                body: Array(#"{"contentState": {"step": 2}}"#.utf8)
            )
            #expect(updated.headers[.eTag] == #""2""#)
        }
    }

    @Test("Registering a push token records it; the activity shows it")
    func pushToken() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            _ = try await app.client.requestActivity(
                body: .json(.init(activityId: activityID("p1"), activityType: "T", contentState: .empty))
            ).created
            let activity = try await app.client.registerPushToken(
                path: .init(activityId: "p1"),
                body: .json(.init(pushToken: "80f1a9c3"))
            ).ok.body.json
            #expect(activity.pushToken == "80f1a9c3")
            #expect(activity.version == 2)
        }
    }

    @Test("Listing: newest first, filtered by state, in pages that join up without gaps or repeats")
    func listing() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp(maxOpen: 100)
            for index in 0..<7 {
                api.clock.advance(by: .seconds(1))
                _ = try await app.client.requestActivity(
                    body: .json(.init(activityId: activityID("l\(index)"), activityType: "T", contentState: .empty))
                ).created
            }
            _ = try await app.client.endActivity(path: .init(activityId: "l3"), body: .json(.init())).ok

            var seen: [String] = []
            var cursor: String?
            repeat {
                let page = try await app.client.listActivities(query: .init(limit: 3, cursor: cursor)).ok.body.json
                seen += page.activities.map(\.activityId.rawValue)
                cursor = page.nextCursor
            } while cursor != nil
            #expect(seen == (0..<7).reversed().map { "l\($0)" })

            let ended = try await app.client.listActivities(query: .init(state: .ended)).ok.body.json
            #expect(ended.activities.map(\.activityId.rawValue) == ["l3"])
            #expect(ended.nextCursor == nil)
        }
    }

    @Test("Every rule's refusal is answered with its code, status and details")
    func refusals() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp(maxOpen: 2, maxOpenPerDevice: 1, priorityBudgetPerHour: 1)
            let client = app.client
            let phone = DeviceID(rawValue: "phone")!
            _ = try await client.requestActivity(
                body: .json(
                    .init(activityId: activityID("a1"), activityType: "T", contentState: .empty, deviceId: phone)
                )
            ).created

            // activity_exists
            var body = try await client.requestActivity(
                body: .json(.init(activityId: activityID("a1"), activityType: "T", contentState: .empty))
            ).conflict.body.applicationProblemJson
            #expect(body.code == "activity_exists")

            // device_maximum_exceeded, with the device, its limit and count
            body = try await client.requestActivity(
                body: .json(
                    .init(activityId: activityID("a2"), activityType: "T", contentState: .empty, deviceId: phone)
                )
            ).conflict.body.applicationProblemJson
            #expect(body.code == "device_maximum_exceeded")
            #expect(body.detail("deviceId") == .string("phone"))
            #expect(body.detail("limit") == .number(1))
            #expect(body.detail("count") == .number(1))

            // data_too_large (413) with the measured size
            let big = JSONObject(["text": .string(String(repeating: "x", count: 4100))])
            body = try await client.requestActivity(
                body: .json(.init(activityId: activityID("big"), activityType: "T", contentState: big))
            ).contentTooLarge.body.applicationProblemJson
            #expect(body.code == "data_too_large")
            #expect(body.detail("size") == .number(JSONNumber(JSONObject.empty.encodedSize + big.encodedSize)))
            #expect(body.detail("limit") == .number(4096))

            // target_maximum_exceeded
            _ = try await client.requestActivity(
                body: .json(.init(activityId: activityID("a3"), activityType: "T", contentState: .empty))
            ).created
            body = try await client.requestActivity(
                body: .json(.init(activityId: activityID("a4"), activityType: "T", contentState: .empty))
            ).conflict.body.applicationProblemJson
            #expect(body.code == "target_maximum_exceeded")
            #expect(body.detail("limit") == .number(2))
            #expect(body.detail("count") == .number(2))

            // push_budget_exhausted (429, Retry-After) for an explicit priority 10 over budget
            let a1 = Operations.UpdateActivity.Input.Path(activityId: "a1")
            _ = try await client.updateActivity(path: a1, body: .json(.init(contentState: .empty, priority: .high))).ok
            let limited = try await client.updateActivity(
                path: a1,
                body: .json(.init(contentState: .empty, priority: .high))
            ).tooManyRequests
            #expect(try limited.body.applicationProblemJson.code == "push_budget_exhausted")
            #expect(limited.headers.retryAfter > 0 && limited.headers.retryAfter <= 3600)
            // … while one without a priority is downgraded to 5 and accepted.
            _ = try await client.updateActivity(path: a1, body: .json(.init(contentState: .empty))).ok

            // outdated_update (409) and invalid_timestamp (422)
            let now = api.clock.now
            _ = try await client.updateActivity(path: a1, body: .json(.init(contentState: .empty, timestamp: now))).ok
            body = try await client.updateActivity(
                path: a1,
                body: .json(.init(contentState: .empty, timestamp: now - .seconds(1)))
            ).conflict.body.applicationProblemJson
            #expect(body.code == "outdated_update")
            body = try await client.updateActivity(
                path: a1,
                body: .json(.init(contentState: .empty, timestamp: now + .seconds(9 * 3600)))
            ).unprocessableContent.body.applicationProblemJson
            #expect(body.code == "invalid_timestamp")

            // activity_not_found
            body = try await client.updateActivity(
                path: .init(activityId: "nope"),
                body: .json(.init(contentState: .empty))
            ).notFound.body.applicationProblemJson
            #expect(body.code == "activity_not_found")

            // widget_reload_without_device (409): a3 names no device
            body = try await client.updateActivity(
                path: .init(activityId: "a3"),
                body: .json(.init(contentState: .empty, widgetReload: .init(widgetKinds: ["Order"])))
            ).conflict.body.applicationProblemJson
            #expect(body.code == "widget_reload_without_device")

            // activity_ended, then activity_dismissed
            _ = try await client.endActivity(path: .init(activityId: "a1"), body: .json(.init())).ok
            body = try await client.updateActivity(path: a1, body: .json(.init(contentState: .empty)))
                .conflict.body.applicationProblemJson
            #expect(body.code == "activity_ended")
            #expect(body.detail("state") == .string("ended"))
            _ = try await client.reportDismissal(path: .init(activityId: "a1")).ok
            body = try await client.reportDismissal(path: .init(activityId: "a1")).conflict.body.applicationProblemJson
            #expect(body.code == "activity_dismissed")

            // global_maximum_exceeded
            _ = try await api.admin.setLimits(body: .json(.init(globalMaxOpen: 1))).ok
            body = try await client.requestActivity(
                body: .json(.init(activityId: activityID("a5"), activityType: "T", contentState: .empty))
            ).conflict.body.applicationProblemJson
            #expect(body.code == "global_maximum_exceeded")
            #expect(body.detail("limit") == .number(1))

            // Every refusal is in the rejections log, by code.
            let recorded = Set(try await api.store.rejections(of: app.id, limit: 100).map(\.code))
            #expect(
                recorded == [
                    "activity_exists", "device_maximum_exceeded", "data_too_large", "target_maximum_exceeded",
                    "push_budget_exhausted", "outdated_update", "invalid_timestamp", "activity_not_found",
                    "activity_ended", "activity_dismissed", "global_maximum_exceeded", "widget_reload_without_device",
                ]
            )
            // Refusals append nothing: the log still folds to exactly the projection and counts.
            let replay = try await ProjectionReplay(store: api.store).run(swap: false)
            #expect(replay.isConsistent)
        }
    }

    @Test("End takes a dismissal policy: immediate dismisses at once, after(date) is clamped into the window")
    func dismissalPolicies() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp(maxOpen: 10)
            for id in ["now", "later"] {
                _ = try await app.client.requestActivity(
                    body: .json(.init(activityId: activityID(id), activityType: "T", contentState: .empty))
                ).created
            }
            let immediate = try await app.client.endActivity(
                path: .init(activityId: "now"),
                body: .json(.init(dismissal: .immediate(.init(policy: .immediate))))
            ).ok.body.json
            #expect(immediate.state == .dismissed)

            let later = try await app.client.endActivity(
                path: .init(activityId: "later"),
                body: .json(.init(dismissal: .after(.init(policy: .after, date: api.clock.now + .seconds(24 * 3600)))))
            ).ok.body.json
            #expect(later.state == .ended)
            #expect(later.dismissalDate == later.endedAt.map { $0 + .seconds(4 * 3600) })
        }
    }

    @Test("Idempotency-Key and If-Match are taken as sent, not URI-decoded: a%41, a%zz and a,b are keys of their own")
    func headersAsSent() async throws {
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            _ = try await app.client.requestActivity(
                body: .json(.init(activityId: activityID("h"), activityType: "T", contentState: .empty))
            ).created
            var versions: [String] = []
            for key in ["a%41", "aA", "a%zz", "a,b", "a+b"] {
                let response = try await api.send(
                    .post,
                    "/v1/activities/h/updates",
                    key: app.key.key,
                    headers: [HTTPField.Name("Idempotency-Key")!: key, .ifMatch: "*"],
                    body: Array(#"{"contentState":{"k":"\#(key)"}}"#.utf8)
                )
                #expect(response.status == .ok, "\(key)")
                versions.append(response.headers[.eTag] ?? "")
            }
            // Each key made an update of its own: none was read as another.
            #expect(versions == [#""2""#, #""3""#, #""4""#, #""5""#, #""6""#])
        }
    }
}

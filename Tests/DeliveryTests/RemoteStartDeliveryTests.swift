import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventLogTools
import EventStore
import LocalAPNs
import Testing

/// Remote starts end to end: a real database, the local APNs over HTTP/2 and TLS.
@Suite(.serialized) struct RemoteStartDeliveryTests {
    static func remoteStart(token: String) -> Command {
        var request = Command.Request(
            activityType: "MatchAttributes",
            attributes: JSONObject(["home": .string("Lions")]),
            content: ActivityContent(contentState: JSONObject(["step": .number(0)])),
            deviceID: DeviceID(rawValue: "phone-1")
        )
        request.remoteStart = RemoteStart(
            pushToStartToken: token,
            alert: Alert(title: "Kick-off", body: "Lions v Bears")
        )
        return .request(request)
    }

    @Test func aRemoteStartReachesThePushToStartTokenAndTheNewestUpdateTheTokenItReports() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers {
                let startToken = DeliveryFixture.token(70)
                let stream = fixture.stream("kickoff")
                try await fixture.execute(Self.remoteStart(token: startToken), on: stream, in: store)
                try await fixture.eventually("the start is delivered") {
                    try await store.deliveries(of: stream).contains { $0.outcome == .delivered && $0.version == 1 }
                }
                let start = try #require(fixture.server.received(by: startToken).first)
                guard case .object(let root) = try JSONParser.parse(start.body), case .object(let aps)? = root["aps"]
                else {
                    Issue.record("no aps")
                    return
                }
                #expect(aps["event"] == .string("start"))
                #expect(aps["attributes-type"] == .string("MatchAttributes"))
                #expect(aps["input-push-token"] == .number(1))
                #expect(start.priority == 10)

                // Updates before the device reports the activity's token wait; the newest goes to it.
                try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                try await fixture.execute(DeliveryFixture.update(2), on: stream, in: store)
                try await fixture.eventually("both updates wait for the activity's token") {
                    try await store.deliveries(of: stream).filter { $0.outcome == .awaitingToken }.count == 2
                }
                let token = DeliveryFixture.token(71)
                try await fixture.execute(.registerPushToken(token), on: stream, in: store)
                try await fixture.eventually("the newest content reaches the reported token") {
                    fixture.steps(receivedBy: token) == [2]
                }
                #expect(fixture.server.received(by: startToken).count == 1)
                let lineage = try #require(try await store.tokenLineage(of: stream))
                #expect(lineage.links.map(\.kind) == [.pushToStart, .push])
                #expect(lineage.links.map(\.token) == [startToken, token])
                #expect(lineage.links.allSatisfy { $0.invalidation == nil })
            }
        }
    }

    @Test func anEndBeforeTheReportedTokenReachesItWhenItArrives() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers {
                let stream = fixture.stream("called-off")
                try await fixture.execute(Self.remoteStart(token: DeliveryFixture.token(73)), on: stream, in: store)
                try await fixture.execute(.end(.init(dismissal: .default)), on: stream, in: store)
                try await fixture.eventually("the end waits for the activity's token") {
                    try await store.deliveries(of: stream).contains { $0.outcome == .awaitingToken && $0.version == 2 }
                }
                let token = DeliveryFixture.token(74)
                try await fixture.execute(.registerPushToken(token), on: stream, in: store)
                try await fixture.eventually("the end reaches the token") {
                    fixture.server.received(by: token).count == 1
                }
                let end = try #require(fixture.server.received(by: token).first)
                guard case .object(let root) = try JSONParser.parse(end.body), case .object(let aps)? = root["aps"]
                else {
                    Issue.record("no aps")
                    return
                }
                #expect(aps["event"] == .string("end"))
            }
        }
    }

    @Test func aPushToStartTokenAPNsDeclaresDeadIsInvalidatedInItsSlot() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers {
                let startToken = DeliveryFixture.token(72)
                let slot = PushToStartSlot(
                    app: fixture.app,
                    device: DeviceID(rawValue: "phone-1")!,
                    activityType: "MatchAttributes"
                )
                _ = try await store.registerPushToStartToken(startToken, for: slot)
                fixture.server.unregister(deviceToken: startToken, at: Timestamp.now().microsecondsSince1970 / 1000)
                let stream = fixture.stream("dead-start")
                try await fixture.execute(Self.remoteStart(token: startToken), on: stream, in: store)
                try await fixture.eventually("the start's token is invalidated") {
                    try await store.deliveries(of: stream).contains {
                        $0.outcome == .tokenInvalidated && $0.status == 410
                    }
                }
                try await fixture.eventually("the slot has no token any more") {
                    try await store.pushToStartToken(of: slot)?.current == nil
                }
                let changes = try #require(try await store.pushToStartToken(of: slot)).changes
                #expect(changes.map(\.kind) == [.registered, .invalidated])
                #expect(changes.last?.reason == "Unregistered" && changes.last?.status == 410)
                let lineage = try #require(try await store.tokenLineage(of: stream))
                #expect(lineage.links.count == 1)
                #expect(lineage.links.first?.kind == .pushToStart && lineage.links.first?.invalidation?.status == 410)
                // The audit shows the chain on the request: the token it started with, and its death.
                let audit = AuditTimeline.build(
                    events: try await store.events(of: stream),
                    rejections: [],
                    deliveries: try await store.deliveries(of: stream),
                    lineage: lineage,
                    lifecycle: store.lifecycle
                )
                #expect(audit.first?.token?.kind == "push_to_start")
                #expect(audit.first?.token?.invalidated?.reason == "Unregistered")
                #expect(audit.first?.summary.contains("remote start to push-to-start token") == true)
                #expect(AuditReport.table(audit).contains("token dead"))
            }
        }
    }
}

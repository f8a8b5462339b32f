import ActivityLifecycle
import CanonicalJSON
import Crypto
import Delivery
import EventLogTools
import EventStore
import Foundation
import LocalAPNs
import Logging
import MetricsTestKit
import NIOConcurrencyHelpers
import Postgres
import TestSupport
import Testing

/// The delivery worker end to end: a real database, the local APNs over HTTP/2 and TLS.
/// Serialized: each test runs a worker, a local APNs and their pools, and in parallel they load
/// a 2-core machine enough to slow every other suite.
@Suite(.serialized) struct DeliveryWorkerTests {
    @Test func anUpdateReachesTheDeviceAndItsDeliveryIsRecorded() async throws {
        // Sent exactly once: a lease that runs out under a starved worker (the whole suite on two
        // slow cores) would send it again, as it should; this test has no handover to wait for.
        var configuration = DeliveryFixture.quick
        configuration.lease = .seconds(60)
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers(configuration: configuration) {
                let token = DeliveryFixture.token(1)
                let stream = try await fixture.activityWithToken("a", token: token, in: store)
                try await fixture.execute(DeliveryFixture.update(2, priority: .high), on: stream, in: store)
                try await fixture.eventually("the update is delivered and recorded") {
                    try await store.deliveries(of: stream).contains { $0.outcome == .delivered }
                }
                #expect(fixture.steps(receivedBy: token) == [2])
                let received = try #require(fixture.server.received(by: token).first)
                #expect(received.priority == 10)
                let delivery = try #require(try await store.deliveries(of: stream).first)
                #expect(delivery.outcome == .delivered)
                #expect(delivery.attempt == 1)
                #expect(delivery.status == 200)
                #expect(delivery.version == 3)
                #expect(delivery.apnsID == received.apnsID)
                #expect(delivery.deviceToken == token)
                // The row names the event that registered the token rather than copying it; the
                // token read back comes from that event.
                let registered = try await store.events(of: stream).first {
                    if case .pushTokenChanged = $0.event.payload { true } else { false }
                }
                #expect(delivery.tokenPosition != nil && delivery.tokenPosition == registered?.position)
                #expect(delivery.latency != nil)
                // Recording a delivery appends no event and leaves the version alone.
                #expect(try await store.activity(stream)?.activity.version == 3)
                #expect(try await store.events(of: stream).count == 3)
                // The audit shows the push under its event.
                let audit = AuditTimeline.build(
                    events: try await store.events(of: stream),
                    rejections: [],
                    deliveries: try await store.deliveries(of: stream),
                    lifecycle: store.lifecycle
                )
                #expect(audit.map(\.deliveries.count) == [0, 0, 1])
                #expect(audit.last?.deliveries.first?.outcome == "delivered")
                let table = AuditReport.table(audit).split(separator: "\n")
                #expect(table.last?.contains("push #1") == true)
                #expect(table.last?.contains("delivered (200, ") == true)
            }
        }
    }

    @Test func updatesWithoutATokenWaitAndTheNewestGoesWhenOneIsRegistered() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers {
                let stream = fixture.stream("late")
                try await fixture.execute(
                    .request(.init(activityType: "Game", content: ActivityContent(contentState: .empty))),
                    on: stream,
                    in: store
                )
                try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                try await fixture.execute(DeliveryFixture.update(2), on: stream, in: store)
                try await fixture.eventually("both updates are recorded as waiting for a token") {
                    try await store.deliveries(of: stream).filter { $0.outcome == .awaitingToken }.count == 2
                }
                #expect(fixture.server.received.isEmpty)
                let token = DeliveryFixture.token(2)
                try await fixture.execute(.registerPushToken(token), on: stream, in: store)
                try await fixture.eventually("the newest content reaches the new token") {
                    fixture.steps(receivedBy: token) == [2]
                }
            }
        }
    }

    @Test func aNewerUpdateSupersedesAnOlderOneWaitingToBeRetried() async throws {
        // The retry waits longer than any stall of a loaded machine between the failure and the
        // newer update, and the lease outlasts it too: the newer update supersedes the retry at
        // once, so neither bound slows the test.
        var slowRetries = DeliveryFixture.quick
        slowRetries.initialBackoff = .seconds(60)
        slowRetries.maximumBackoff = .seconds(60)
        slowRetries.lease = .seconds(60)
        let metrics = TestMetrics()
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers(configuration: slowRetries, metrics: metrics) {
                let token = DeliveryFixture.token(3)
                let stream = try await fixture.activityWithToken("latest", token: token, in: store)
                fixture.server.fail(.status(500, reason: "InternalServerError"), times: 1, deviceToken: token)
                try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                try await fixture.eventually("the first attempt fails and waits to be retried") {
                    try await store.deliveries(of: stream).contains { $0.outcome == .retrying }
                }
                try await fixture.execute(DeliveryFixture.update(2), on: stream, in: store)
                try await fixture.eventually("the newer update is delivered") {
                    try await store.deliveries(of: stream).contains { $0.outcome == .delivered }
                }
                try await Task.sleep(for: .milliseconds(500))
                #expect(fixture.steps(receivedBy: token) == [2])
                let outcomes = try await store.deliveries(of: stream).reversed().map {
                    "\($0.version) \($0.outcome.rawValue)"
                }
                #expect(outcomes == ["3 retrying", "3 superseded", "4 delivered"])
                // Every outcome is counted once recorded, the superseded one too.
                try await fixture.eventually("the metrics count every outcome") {
                    ["retrying", "superseded", "delivered"].allSatisfy { outcome in
                        (try? metrics.expectCounter("liveline_deliveries_total", [("outcome", outcome)]).totalValue)
                            == 1
                    }
                }
            }
        }
    }

    @Test func pushesOfOneActivityReachAPNsInOrder() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers {
                let token = DeliveryFixture.token(4)
                let stream = try await fixture.activityWithToken("ordered", token: token, in: store)
                for step in 1...30 {
                    try await fixture.execute(DeliveryFixture.update(step), on: stream, in: store)
                }
                try await fixture.eventually("the last update is delivered") {
                    fixture.steps(receivedBy: token).last == 30
                }
                let steps = fixture.steps(receivedBy: token)
                #expect(steps == steps.sorted())
                #expect(Set(steps).count == steps.count)
                // Every update is settled: delivered or superseded by a newer one.
                try await fixture.eventually("every update is settled") {
                    let settled = try await store.deliveries(of: stream).filter { $0.outcome.isFinal }
                    return Set(settled.map(\.version)) == Set(3...32)
                }
            }
        }
    }

    @Test func aTokenAPNsDeclaresDeadGetsNothingMoreUntilItIsRegisteredAgain() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers {
                let token = DeliveryFixture.token(5)
                let stream = try await fixture.activityWithToken("dead", token: token, in: store)
                let since = Timestamp.now()
                fixture.server.unregister(deviceToken: token, at: since.microsecondsSince1970 / 1000)
                try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                try await fixture.eventually("the token is invalidated") {
                    try await store.deliveries(of: stream).contains {
                        $0.outcome == .tokenInvalidated && $0.status == 410
                    }
                }
                try await fixture.execute(DeliveryFixture.update(2), on: stream, in: store)
                try await fixture.eventually("the next update is not sent") {
                    try await store.deliveries(of: stream).contains {
                        $0.version == 4 && $0.outcome == .tokenInvalidated
                    }
                }
                #expect(try await store.deliveries(of: stream).first?.attempt == 0)
                #expect(fixture.server.refusals["Unregistered"] == 1)

                // A new token: the newest content goes to it.
                let newToken = DeliveryFixture.token(55)
                try await fixture.execute(.registerPushToken(newToken), on: stream, in: store)
                try await fixture.eventually("the newest content reaches the new token") {
                    fixture.steps(receivedBy: newToken) == [2]
                }
                #expect(fixture.steps(receivedBy: token).isEmpty)
            }
        }
    }

    @Test func aTokenRegisteredAfterAPNsSaysItDiedIsStillUsed() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers {
                let token = DeliveryFixture.token(9)
                // APNs' timestamp is before the registration: the device registered it again since.
                let before = Timestamp.now() - .seconds(60)
                let stream = try await fixture.activityWithToken("revived", token: token, in: store)
                fixture.server.unregister(deviceToken: token, at: before.microsecondsSince1970 / 1000)
                try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                try await fixture.eventually("the 410 is recorded") {
                    try await store.deliveries(of: stream).contains { $0.outcome == .tokenInvalidated }
                }
                fixture.server.reinstate(deviceToken: token)
                try await fixture.execute(DeliveryFixture.update(2), on: stream, in: store)
                try await fixture.eventually("the next update is sent to it") {
                    fixture.steps(receivedBy: token) == [2]
                }
            }
        }
    }

    @Test func refusedCredentialsSuspendTheAppUntilNewOnesAreSet() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers {
                let token = DeliveryFixture.token(6)
                let stream = try await fixture.activityWithToken("suspended", token: token, in: store)
                fixture.server.fail(.status(403, reason: "InvalidProviderToken"))
                try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                try await fixture.eventually("the app is suspended") {
                    try await store.deliveries(of: stream).contains { $0.outcome == .appSuspended && $0.status == 403 }
                }
                try await fixture.execute(DeliveryFixture.update(2), on: stream, in: store)
                try await fixture.eventually("the next update is held back") {
                    try await store.deliveries(of: stream).contains { $0.version == 4 && $0.outcome == .appSuspended }
                }
                #expect(fixture.server.received.isEmpty)
                // New credentials resume delivery; the token was kept.
                try await fixture.setCredentials(P256.Signing.PrivateKey(), keyID: "KEY0000002", in: store)
                try await fixture.execute(DeliveryFixture.update(3), on: stream, in: store)
                try await fixture.eventually("the update after the new credentials is delivered") {
                    fixture.steps(receivedBy: token).last == 3
                }
                // The held update goes on resume, unless the newer one superseded it first.
                #expect([[3], [2, 3]].contains(fixture.steps(receivedBy: token)))
                #expect(fixture.server.received.first?.keyID == "KEY0000002")
            }
        }
    }

    @Test func anAppWithoutCredentialsSendsNothingAndSaysSo() async throws {
        try await DeliveryFixture.run(credentials: false) { fixture, store in
            try await fixture.withWorkers {
                let stream = try await fixture.activityWithToken("none", token: DeliveryFixture.token(7), in: store)
                try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                try await fixture.eventually("the update is recorded as not sent") {
                    try await store.deliveries(of: stream).contains { $0.outcome == .noCredentials }
                }
                #expect(fixture.server.received.isEmpty)
            }
        }
    }

    /// Events no one announces (appended by a writer without a notifier, or announced by a
    /// notification that was lost) are found by the read the worker makes once a second in any
    /// case; a read that fills its page reads on at once, so such a backlog does not drain a page
    /// a second.
    @Test func aBacklogNoOneAnnouncedIsReadOnAtOnce() async throws {
        try await DeliveryFixture.run { fixture, store in
            var configuration = DeliveryFixture.quick
            configuration.batchSize = 1
            var streams: [StreamID] = []
            for index in 0..<40 {
                streams.append(
                    try await fixture.activityWithToken(
                        "quiet-\(index)",
                        token: DeliveryFixture.token(index + 1),
                        in: store
                    )
                )
            }
            try await fixture.withWorkers(configuration: configuration) {
                // The worker has read what was announced, and waits.
                try await fixture.execute(DeliveryFixture.update(1), on: streams[0], in: store)
                try await fixture.eventually("the announced update is delivered") {
                    try await store.deliveries(of: streams[0]).contains { $0.outcome == .delivered }
                }
                try await Task.sleep(for: .milliseconds(200))
                // 39 updates from a store that announces nothing: 39 pages of one event, which a
                // page a second would take 39 s to read, longer than `eventually` waits.
                try await TestDatabase.withPool(fixture.database) { pool in
                    let quiet = EventStore(pool: pool, lifecycle: Lifecycle())
                    for stream in streams.dropFirst() {
                        try await fixture.execute(DeliveryFixture.update(1), on: stream, in: quiet)
                    }
                }
                try await fixture.eventually("every update no one announced is delivered") {
                    var delivered = 0
                    for stream in streams.dropFirst()
                    where try await store.deliveries(of: stream).contains(where: { $0.outcome == .delivered }) {
                        delivered += 1
                    }
                    return delivered == streams.count - 1
                }
            }
        }
    }

    @Test func pushesInFlightWhenAWorkerDiesAreSentByTheNext() async throws {
        try await DeliveryFixture.run { fixture, store in
            let token = DeliveryFixture.token(8)
            let stream = try await fixture.activityWithToken("crash", token: token, in: store)
            fixture.server.fail(.stall, times: 1)
            try await fixture.withWorkers {
                try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                try await fixture.eventually("the push is on the wire, unanswered") {
                    fixture.server.refusals.isEmpty && fixture.server.stalled == 1
                }
            }
            // The worker is gone without an answer; the next one takes its shards over.
            #expect(fixture.server.received.isEmpty)
            try await fixture.withWorkers {
                try await fixture.eventually("the push is sent again and delivered") {
                    fixture.steps(receivedBy: token) == [1]
                }
            }
        }
    }

    @Test func twoWorkersDeliverEachPushOnce() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers(2) {
                // Let the two share the shards out.
                try await Task.sleep(for: .milliseconds(600))
                var streams: [StreamID] = []
                for number in 0..<40 {
                    streams.append(
                        try await fixture.activityWithToken(
                            "shared-\(number)",
                            token: DeliveryFixture.token(100 + number),
                            in: store
                        )
                    )
                }
                for stream in streams {
                    try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                }
                try await fixture.eventually("every update is delivered") {
                    fixture.server.received.count >= 40
                }
                try await Task.sleep(for: .milliseconds(500))
                let received = fixture.server.received
                #expect(received.count == 40)
                #expect(Set(received.map(\.apnsID)).count == 40)
            }
        }
    }

    @Test func aWorkerThatStopsLeavesItsShardsAndItsPlaceAtOnce() async throws {
        try await DeliveryFixture.run { fixture, store in
            let connection = try Connection.connect(fixture.database)
            func count(_ sql: PostgresQuery) throws -> Int64 {
                try connection.query(sql).single.map { try $0.decode(0, as: Int64.self) } ?? -1
            }
            try await fixture.withWorkers {
                try await fixture.eventually("the worker holds every shard") {
                    try count("SELECT count(*) FROM delivery_shards WHERE owner IS NOT NULL") == 16
                }
            }
            // Not at the end of its lease or heartbeat: a restarted process takes every shard at once.
            #expect(try count("SELECT count(*) FROM delivery_shards WHERE owner IS NOT NULL") == 0)
            #expect(try count("SELECT count(*) FROM delivery_workers") == 0)
            try await fixture.withWorkers {
                try await fixture.eventually("the next worker holds every shard") {
                    try count("SELECT count(*) FROM delivery_shards WHERE owner IS NOT NULL") == 16
                }
            }
        }
    }

    @Test func thePrivateKeyAppearsInNoLogLineAndNoError() async throws {
        let recorder = LogRecorder()
        let logger = recorder.logger(label: "delivery")
        try await DeliveryFixture.run { fixture, store in
            let token = DeliveryFixture.token(10)
            let stream = try await fixture.activityWithToken("secret", token: token, in: store)
            // A refused push and a suspension, so that errors are logged and recorded too.
            fixture.server.fail(.status(500, reason: "InternalServerError"))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await fixture.runWorker(logger: logger) }
                try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                try await fixture.eventually("the update is delivered after a retry") {
                    fixture.steps(receivedBy: token) == [1]
                }
                group.cancelAll()
            }
            let key = fixture.key
            let secrets = [
                key.pemRepresentation.split(separator: "\n").dropFirst().first.map(String.init)!,
                key.rawRepresentation.base64EncodedString(),
                key.rawRepresentation.map { String(format: "%02x", $0) }.joined(),
            ]
            let logged = recorder.lines
            #expect(logged.contains { $0.contains("minted an APNs provider token") })
            let reasons = try await store.deliveries(of: stream).compactMap(\.reason)
            for secret in secrets {
                #expect(!logged.contains { $0.contains(secret) })
                #expect(!reasons.contains { $0.contains(secret) })
            }
        }
    }
}

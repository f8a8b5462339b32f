import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventLogTools
import EventStore
import LocalAPNs
import Logging
import MetricsTestKit
import TestSupport
import Testing

/// Unconfirmed starts end to end: a remote start delivered to the local APNs, the deadline worker
/// settling it once a short window has run out — across a restart of that worker.
@Suite(.serialized) struct UnconfirmedStartDeliveryTests {
    static let window = Duration.seconds(2)

    /// A deadline worker with `window`, on a pool of its own (as a process has), while `body` runs.
    static func withDeadlineWorker(
        _ fixture: DeliveryFixture,
        window: Duration = window,
        metrics: TestMetrics,
        _ body: () async throws -> Void
    ) async throws {
        var policy = LifecyclePolicy.standard
        policy.startConfirmationWindow = window
        policy.suspectAfterUnconfirmedStarts = 2
        try await TestDatabase.withPool(fixture.database, maximumConnections: 2) { pool in
            let worker = DeadlineWorker(
                store: EventStore(pool: pool, lifecycle: Lifecycle(policy: policy)),
                listener: nil,
                logger: TestDatabase.logger,
                metrics: metrics
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await worker.run() }
                try await body()
                group.cancelAll()
            }
        }
    }

    @Test func aStartWhoseTokenNeverComesIsFlaggedAfterARestartAndTheSecondInARowMakesTheTokenSuspect() async throws {
        let metrics = TestMetrics()
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers {
                let startToken = DeliveryFixture.token(80)
                let first = fixture.stream("first")
                let confirmed = fixture.stream("confirmed")
                // The first worker stops before the window runs out, however long the deliveries
                // take on a loaded machine: its process was configured with an hour.
                try await Self.withDeadlineWorker(fixture, window: .seconds(3600), metrics: metrics) {
                    try await fixture.execute(
                        RemoteStartDeliveryTests.remoteStart(token: startToken),
                        on: first,
                        in: store
                    )
                    try await fixture.execute(
                        RemoteStartDeliveryTests.remoteStart(token: DeliveryFixture.token(81)),
                        on: confirmed,
                        in: store
                    )
                    try await fixture.eventually("both starts are delivered") {
                        let firstDelivered = try await store.deliveries(of: first).contains { $0.outcome == .delivered }
                        let otherDelivered = try await store.deliveries(of: confirmed).contains {
                            $0.outcome == .delivered
                        }
                        return firstDelivered && otherDelivered
                    }
                    // One device reports its activity's token in time.
                    try await fixture.execute(.registerPushToken(DeliveryFixture.token(82)), on: confirmed, in: store)
                }
                try await Task.sleep(for: Self.window + .milliseconds(500))
                #expect(try await store.events(of: first).map(\.event.type) == [.requested])

                try await Self.withDeadlineWorker(fixture, metrics: metrics) {
                    try await fixture.eventually("the start whose token never came is flagged") {
                        try await store.events(of: first).last?.event.type == .startUnconfirmed
                    }
                    // A second start to the same token, also never confirmed: the token is suspect.
                    let second = fixture.stream("second")
                    try await fixture.execute(
                        RemoteStartDeliveryTests.remoteStart(token: startToken),
                        on: second,
                        in: store
                    )
                    try await fixture.eventually("the second start is flagged too") {
                        try await store.events(of: second).last?.event.type == .startUnconfirmed
                    }
                    guard case .startUnconfirmed(let flag) = try await store.events(of: second).last?.event.payload
                    else {
                        return
                    }
                    #expect(flag.unconfirmedInARow == 2 && flag.tokenSuspect && flag.pushToStartToken == startToken)
                    try await fixture.eventually("each verdict is counted") {
                        (try? metrics.expectCounter("liveline_remote_starts_total", [("verdict", "unconfirmed")]))?
                            .totalValue == 2
                            && (try? metrics.expectCounter("liveline_remote_starts_total", [("verdict", "confirmed")]))?
                                .totalValue == 1
                    }
                }
                #expect(try await store.events(of: confirmed).map(\.event.type) == [.requested, .pushTokenChanged])
                // The app's feed carries the flag; nothing more went to the device. The feed reads
                // below the cluster's oldest running transaction, which another test's database
                // may hold back for a while.
                try await fixture.eventually("the feed carries both flags") {
                    let feed = try await store.events(after: 0, app: fixture.app, limit: 100)
                    return feed.filter { $0.event.type == .startUnconfirmed }.map(\.stream) == [
                        first, fixture.stream("second"),
                    ]
                }
                #expect(fixture.server.received(by: startToken).count == 2)
                // The log still folds strictly, and the audit tells it.
                let summary = try await LogVerifier(store: store, now: Timestamp.now()).verify()
                #expect(summary.isClean, "\(summary.findings)")
                let audit = AuditTimeline.build(
                    events: try await store.events(of: first),
                    rejections: [],
                    lifecycle: Lifecycle()
                )
                #expect(audit.last?.type == "activity.start_unconfirmed")
                #expect(audit.last?.summary.contains("no push token by") == true)
            }
        }
    }
}

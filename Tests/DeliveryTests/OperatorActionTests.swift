import ActivityLifecycle
import CanonicalJSON
import Crypto
import Delivery
import EventStore
import LocalAPNs
import Postgres
import TestSupport
import Testing

/// Delivery where operators touch it (issue #38): restarts and handovers while a push is
/// retried, a corrected key under the same key id, and what was held while an app was
/// suspended. A real database and the local APNs over HTTP/2 and TLS.
@Suite(.serialized) struct OperatorActionTests {
    /// Twenty activities delivered while one push of another is retried: the retried one holds
    /// its shard's cursor back, so the next worker reads from below the other shards' cursors.
    /// Before #38 it folded their streams from the wrong version, skipped them for good, and sent
    /// none of their later updates.
    static func deliveredWhileOneIsRetried(
        _ fixture: DeliveryFixture,
        _ store: EventStore
    ) async throws -> [StreamID: String] {
        let stuck = DeliveryFixture.token(900)
        fixture.server.fail(.status(503, reason: "ServiceUnavailable"), times: 10_000, deviceToken: stuck)
        let retried = try await fixture.activityWithToken("retried", token: stuck, in: store)
        try await fixture.execute(DeliveryFixture.update(1), on: retried, in: store)
        try await fixture.eventually("the push is being retried") {
            try await store.deliveries(of: retried).contains { $0.outcome == .retrying }
        }
        var others: [StreamID: String] = [:]
        for number in 0..<20 {
            let token = DeliveryFixture.token(1000 + number)
            others[try await fixture.activityWithToken("other-\(number)", token: token, in: store)] = token
        }
        for stream in others.keys { try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store) }
        // Received and recorded: the workers are stopped by cancelling them, which records
        // nothing more (a graceful stop would), and a push whose outcome was not recorded goes
        // again, as it should after a crash.
        try await fixture.eventually("the twenty first updates are delivered and recorded") {
            guard others.values.allSatisfy({ fixture.steps(receivedBy: $0) == [1] }) else { return false }
            for stream in others.keys
            where try await !store.deliveries(of: stream).contains(where: { $0.outcome == .delivered }) {
                return false
            }
            return true
        }
        return others
    }

    static func updatedAgainAndDelivered(
        _ others: [StreamID: String],
        _ fixture: DeliveryFixture,
        _ store: EventStore
    ) async throws {
        for stream in others.keys { try await fixture.execute(DeliveryFixture.update(2), on: stream, in: store) }
        try await fixture.eventually("every second update is delivered") {
            others.values.allSatisfy { fixture.steps(receivedBy: $0) == [1, 2] }
        }
        for (stream, token) in others {
            #expect(fixture.steps(receivedBy: token) == [1, 2], "\(stream)")
        }
    }

    @Test func aRestartWhileAnotherShardsPushIsRetriedLosesNothing() async throws {
        try await DeliveryFixture.run { fixture, store in
            var others: [StreamID: String] = [:]
            try await fixture.withWorkers {
                others = try await Self.deliveredWhileOneIsRetried(fixture, store)
            }
            // Stopped (cancelled, every outcome recorded) and started again.
            try await fixture.withWorkers {
                try await Self.updatedAgainAndDelivered(others, fixture, store)
            }
        }
    }

    @Test func aHandoverWhileAnotherShardsPushIsRetriedLosesNothing() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers {
                let others = try await Self.deliveredWhileOneIsRetried(fixture, store)
                // A second process joins: half the shards, the retried one's among them or not,
                // are handed over from their cursors.
                try await fixture.withWorkers {
                    try await fixture.eventually("the shards are shared out") {
                        try await fixture.owners(in: store) == 2
                    }
                    try await Self.updatedAgainAndDelivered(others, fixture, store)
                }
            }
        }
    }

    /// A `.p8` that was wrong is replaced under the same team and key id: the next push is signed
    /// with the new key, not with a provider token minted from the old one.
    @Test func aCorrectedKeyUnderTheSameKeyIDTakesEffectOnTheNextPush() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers(configuration: DeliveryFixture.slowAppRefresh) {
                let token = DeliveryFixture.token(11)
                let stream = try await fixture.activityWithToken("corrected", token: token, in: store)
                // APNs knows key KEY0000001 by `fixture.key`; Liveline is given another key.
                try await fixture.storeCredentials(P256.Signing.PrivateKey(), in: store)
                try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                try await fixture.eventually("APNs refuses the wrong key and the app is suspended") {
                    try await store.deliveries(of: stream).contains { $0.outcome == .appSuspended && $0.status == 403 }
                }
                try await fixture.storeCredentials(fixture.key, in: store)
                try await fixture.execute(DeliveryFixture.update(2), on: stream, in: store)
                try await fixture.eventually("the push after the corrected key is delivered") {
                    fixture.steps(receivedBy: token).last == 2
                }
                #expect(fixture.server.refusals["InvalidProviderToken"] == 1)
            }
        }
    }

    /// Updates accepted while the app was suspended reach the device when new credentials
    /// resume it — the newest, once — and in a process that only hears of the change (its own
    /// readings of the app are trusted for a minute).
    @Test func whatWasHeldWhileSuspendedGoesWhenTheAppResumes() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withWorkers(configuration: DeliveryFixture.slowAppRefresh) {
                let token = DeliveryFixture.token(12)
                let stream = try await fixture.activityWithToken("held", token: token, in: store)
                try await fixture.storeCredentials(P256.Signing.PrivateKey(), in: store)
                try await fixture.execute(DeliveryFixture.update(1, priority: .high), on: stream, in: store)
                try await fixture.eventually("the app is suspended") {
                    try await store.deliveries(of: stream).contains { $0.outcome == .appSuspended }
                }
                try await fixture.execute(DeliveryFixture.update(2), on: stream, in: store)
                try await fixture.execute(DeliveryFixture.update(3, priority: .high), on: stream, in: store)
                try await fixture.eventually("the newest update is held") {
                    try await store.deliveries(of: stream).contains { $0.version == 5 && $0.outcome == .appSuspended }
                }
                #expect(fixture.server.received.isEmpty)
                try await fixture.storeCredentials(fixture.key, in: store)
                try await fixture.eventually("the newest held content reaches the device") {
                    fixture.steps(receivedBy: token) == [3]
                }
                try await Task.sleep(for: .milliseconds(500))
                #expect(fixture.steps(receivedBy: token) == [3])
                #expect(fixture.server.received(by: token).first?.priority == 10)
                let delivered = try await store.deliveries(of: stream).filter { $0.outcome == .delivered }
                #expect(delivered.map(\.version) == [5])
                #expect(try await fixture.heldPushes() == 0)
            }
        }
    }
}

extension OperatorActionTests {
    /// A log that cannot be folded (written around Liveline: an event whose version does not
    /// follow) must never be skipped silently, nor hold up the other activities.
    @Test func anActivityWhoseLogCannotBeFoldedIsAnErrorAndADegradationAndTheOthersGoOn() async throws {
        try await DeliveryFixture.run { fixture, store in
            let recorder = LogRecorder()
            let health = DeliveryHealth()
            let broken = try await fixture.activityWithToken("broken", token: DeliveryFixture.token(13), in: store)
            let fine = try await fixture.activityWithToken("fine", token: DeliveryFixture.token(14), in: store)
            try fixture.execute(
                """
                INSERT INTO events (position, app_id, activity_id, version, type, caused_by, occurred_at)
                VALUES (pg_current_xact_id()::text::bigint * 65536, \(broken.app.rawValue), \(broken.activity.rawValue),
                        9, 'activity.became_stale', 'system', now())
                """
            )
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    try await fixture.runWorker(logger: recorder.logger(label: "delivery"), health: health)
                }
                try await fixture.execute(DeliveryFixture.update(1), on: fine, in: store)
                try await fixture.eventually("the other activity's update is delivered") {
                    fixture.steps(receivedBy: DeliveryFixture.token(14)) == [1]
                }
                try await fixture.eventually("the unfoldable activity is counted") { health.unreadableStreams == 1 }
                group.cancelAll()
            }
            #expect(
                recorder.lines.contains {
                    $0.hasPrefix("error delivery cannot fold an activity's log") && $0.contains("broken")
                },
                "\(recorder.lines.filter { $0.hasPrefix("error") })"
            )
        }
    }
}

extension DeliveryFixture {
    /// An app's credentials trusted for a minute: only an announced change is seen sooner.
    static let slowAppRefresh: DeliveryWorker.Configuration = {
        var configuration = quick
        configuration.appRefresh = .seconds(60)
        return configuration
    }()

    /// Sets the app's credentials to `key` under the fixture's team and key id, without telling
    /// the local APNs (which keeps the key it was given).
    func storeCredentials(_ key: P256.Signing.PrivateKey, in store: EventStore) async throws {
        let credentials = try APNsCredentials(
            teamID: Self.teamID,
            keyID: Self.keyID,
            environment: .sandbox,
            privateKeyPEM: key.pemRepresentation
        )
        _ = try await store.setAPNsCredentials(credentials, for: app, sealedWith: secret, by: .commandLine)
    }

    /// How many workers hold shards.
    func owners(in store: EventStore) async throws -> Int {
        try count("SELECT count(DISTINCT owner)::bigint FROM delivery_shards")
    }

    /// Rows of `delivery_holds`.
    func heldPushes() async throws -> Int {
        try count("SELECT count(*)::bigint FROM delivery_holds")
    }

    private func count(_ sql: PostgresQuery) throws -> Int {
        let connection = try Connection.connect(database)
        return try connection.query(sql).single.map { Int(try $0.decode(0, as: Int64.self)) } ?? -1
    }

    /// Runs `sql` on the database, around Liveline.
    func execute(_ sql: PostgresQuery) throws {
        try Connection.connect(database).execute(sql)
    }
}

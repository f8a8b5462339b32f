import ActivityLifecycle
import CanonicalJSON
import Crypto
import Delivery
import EventStore
import Foundation
import LocalAPNs
import Logging
import Testing

/// The client against the local APNs, over real HTTP/2 and TLS.
@Suite(.serialized) struct APNsClientTests {
    @Test func aRenderedPushReachesAPNsAsRendered() async throws {
        try await LocalAPNsFixture.run { fixture in
            let push = LocalAPNsFixture.push(priority: .low)
            let response = await fixture.client.send(push, with: fixture.credentials)
            #expect(response == .answered(status: 200, reason: nil, tokenInvalidSince: nil, apnsID: push.apnsID))
            let received = try #require(fixture.server.received.first)
            #expect(received.body == push.body)
            #expect(received.deviceToken == push.deviceToken)
            #expect(received.topic == push.topic)
            #expect(received.priority == 5)
            #expect(received.expiration == push.expiration.epochSeconds)
            #expect(received.apnsID == push.apnsID)
            #expect(received.teamID == LocalAPNsFixture.teamID)
            #expect(received.keyID == LocalAPNsFixture.keyID)
        }
    }

    @Test func oneProviderTokenServesManyRequestsInFlightTogether() async throws {
        try await LocalAPNsFixture.run { fixture in
            await withTaskGroup { group in
                for _ in 0..<60 {
                    group.addTask { _ = await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials) }
                }
            }
            let received = fixture.server.received
            #expect(received.count == 60)
            #expect(Set(received.map(\.providerToken)).count == 1)
            #expect(Set(received.map(\.connection)).count == 1, "one connection carries them all")
        }
    }

    @Test func aBatchIsAnsweredOncePerPushByItsIndexOnAConnectionPerTeam() async throws {
        try await LocalAPNsFixture.run { fixture in
            let otherKey = P256.Signing.PrivateKey()
            fixture.server.register(
                teamID: "TEAM000002",
                keyID: "KEY0000002",
                publicKey: otherKey.publicKey,
                bundleID: "com.example.other"
            )
            let other = try APNsCredentials(
                teamID: "TEAM000002",
                keyID: "KEY0000002",
                environment: .sandbox,
                privateKeyPEM: otherKey.pemRepresentation
            )
            fixture.server.fail(.status(500, reason: "InternalServerError"), times: 5)
            let pushes = (0..<40).map { index in
                let apnsID = "6f0b8e3a-1d2c-8e4f-9a5b-0c1d2e3f" + String(format: "%04x", index)
                guard index.isMultiple(of: 2) else {
                    let push = LocalAPNsFixture.push(apnsID: apnsID)
                    let elsewhere = APNsRequest(
                        destination: push.destination,
                        topic: PushRenderer.topic(for: "com.example.other"),
                        priority: push.priority,
                        expiration: push.expiration,
                        apnsID: apnsID,
                        body: push.body
                    )
                    return (request: elsewhere, credentials: other)
                }
                return (request: LocalAPNsFixture.push(apnsID: apnsID), credentials: fixture.credentials)
            }
            let (answers, answered) = AsyncStream.makeStream(of: (Int, APNsResponse).self)
            fixture.client.send(pushes) { index, response in answered.yield((index, response)) }
            var responses: [Int: [APNsResponse]] = [:]
            for await (index, response) in answers.prefix(pushes.count) {
                responses[index, default: []].append(response)
            }
            #expect(responses.count == pushes.count)
            #expect(responses.values.allSatisfy { $0.count == 1 })
            let statuses = responses.values.compactMap(\.first?.status)
            #expect(statuses.filter { $0 == 500 }.count == 5)
            #expect(statuses.filter { $0 == 200 }.count == 35)
            for (index, answers) in responses where answers.first?.status == 200 {
                #expect(
                    answers.first
                        == .answered(
                            status: 200,
                            reason: nil,
                            tokenInvalidSince: nil,
                            apnsID: pushes[index].request.apnsID
                        )
                )
            }
            #expect(Set(fixture.server.received.map(\.teamID)) == ["TEAM000001", "TEAM000002"])
            #expect(Set(fixture.server.received.map(\.connection)).count == 2, "a connection per team")
        }
    }

    @Test func oneConnectionCarriesManyTimesItsFlowControlWindowBothWays() async throws {
        // A deadline that a loaded machine (the whole suite at once) cannot reach: this is about
        // flow control, not deadlines.
        try await LocalAPNsFixture.run(requestTimeout: .seconds(60)) { fixture in
            // 40 pushes of 3.5 KB accepted (140 KB) and 40 refused with a 2 KB reason (80 KB):
            // more than HTTP/2's first 64 KB window each way, in few requests.
            let content = String(repeating: "x", count: 3500)
            let large =
                #"{"aps":{"timestamp":1800000000,"event":"update","content-state":{"text":""# + content + "\"}}}"
            fixture.server.fail(.status(500, reason: String(repeating: "R", count: 2000)), times: 40)
            var statuses: [Int?: Int] = [:]
            for _ in 0..<2 {
                await withTaskGroup(of: Int?.self) { group in
                    for _ in 0..<40 {
                        let push = LocalAPNsFixture.push(body: large)
                        group.addTask { await fixture.client.send(push, with: fixture.credentials).status }
                    }
                    for await status in group { statuses[status, default: 0] += 1 }
                }
            }
            #expect(statuses == [200: 40, 500: 40])
            #expect(Set(fixture.server.received.map(\.connection)).count == 1)
        }
    }

    @Test func pushesWaitingWhenTheConnectionClosesAreAnsweredAtOnce() async throws {
        try await LocalAPNsFixture.run(requestTimeout: .seconds(60)) { fixture in
            #expect(await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials).status == 200)
            fixture.server.fail(.stall, times: 3)
            let started = ContinuousClock.now
            await withTaskGroup { group in
                for _ in 0..<3 {
                    group.addTask {
                        let response = await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials)
                        #expect(APNsVerdict(response) == .retry(renewToken: false), "\(response)")
                    }
                }
                while fixture.server.stalled < 3 { try? await Task.sleep(for: .milliseconds(10)) }
                // The next push makes the local APNs send GOAWAY and close the connection.
                fixture.server.fail(.goAway(reason: "Shutdown"))
                let refused = await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials)
                #expect(APNsVerdict(refused) == .retry(renewToken: false), "\(refused)")
            }
            // Long before the 60 s deadline: the connection's end answered the stalled pushes.
            #expect(ContinuousClock.now - started < .seconds(30))
            #expect(await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials).status == 200)
        }
    }

    @Test func aHostThatRefusesConnectionsIsNoAnswerAndTriedAgainLater() async throws {
        let closed = try await LocalAPNs.start()
        let address = closed.baseURL
        try await closed.shutdown()
        let client = try APNsClient(
            configuration: .local(baseURL: address, trustedCertificatePEM: closed.certificatePEM),
            logger: Logger(label: "test")
        )
        let credentials = try LocalAPNsFixture.makeCredentials(key: P256.Signing.PrivateKey())
        for _ in 0..<2 {
            let response = await client.send(LocalAPNsFixture.push(), with: credentials)
            guard case .unanswered(let why) = response else {
                Issue.record("expected no answer, got \(response)")
                break
            }
            // Refused, or — when another test's server took the freed port meanwhile — closed
            // on the push: either way no answer, for the worker to try again later.
            #expect(why.contains("could not connect") || why.contains("closed channel"), "\(why)")
        }
        try await client.shutdown()
    }

    @Test(
        "APNs addresses are https://host or https://host:port",
        arguments: [
            ("https://api.push.apple.com", true),
            ("https://api.sandbox.push.apple.com:443", true),
            ("https://127.0.0.1:8443", true),
            ("https://[::1]:8443", true),
            ("https://localhost/", true),
            ("http://api.push.apple.com", false),
            ("https://", false),
            ("https://api.push.apple.com/3/device", false),
            ("https://api.push.apple.com:0", false),
            ("https://api.push.apple.com:70000", false),
            ("https://api.push.apple.com:port", false),
            ("https://:443", false),
        ]
    )
    func addresses(url: String, valid: Bool) {
        #expect(APNsConfiguration.isBaseURL(url) == valid)
    }

    @Test func theProviderTokenIsRenewedAtFiftyMinutesAndNotBefore() async throws {
        try await LocalAPNsFixture.run { fixture in
            for minutes in [0, 20, 29] {
                fixture.clock.advance(.seconds(minutes * 60))
                #expect(await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials).status == 200)
            }
            fixture.clock.advance(.seconds(60))
            #expect(await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials).status == 200)
            let tokens = fixture.server.received.map(\.providerToken)
            #expect(Set(tokens.prefix(3)).count == 1)
            #expect(tokens[3] != tokens[0])
            #expect(fixture.server.refusals.isEmpty)
        }
    }

    @Test(
        "planned failures come back as APNs answers them",
        arguments: [
            (LocalAPNs.Failure.status(429, reason: "TooManyRequests"), 429, APNsVerdict.retry(renewToken: false)),
            (.status(500, reason: "InternalServerError"), 500, .retry(renewToken: false)),
            (.status(503, reason: "ServiceUnavailable"), 503, .retry(renewToken: false)),
            (.status(400, reason: "DeviceTokenNotForTopic"), 400, .invalidateToken(since: nil)),
            (.status(403, reason: "InvalidProviderToken"), 403, .suspendApp),
        ]
    )
    func plannedFailures(failure: LocalAPNs.Failure, status: Int, verdict: APNsVerdict) async throws {
        try await LocalAPNsFixture.run { fixture in
            fixture.server.fail(failure)
            let failed = await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials)
            #expect(failed.status == status)
            #expect(APNsVerdict(failed) == verdict)
            #expect(await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials).status == 200)
        }
    }

    @Test func aStalledRequestEndsAtItsDeadline() async throws {
        try await LocalAPNsFixture.run(requestTimeout: .seconds(4)) { fixture in
            // A connection first, so that the deadline can only end the stall.
            #expect(await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials).status == 200)
            fixture.server.fail(.stall)
            let stalled = await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials)
            guard case .unanswered = stalled else {
                Issue.record("expected no answer, got \(stalled)")
                return
            }
            #expect(APNsVerdict(stalled) == .retry(renewToken: false))
            let next = await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials)
            #expect(next.status == 200, "\(next)")
        }
    }

    @Test func stalledRequestsSentAtDifferentTimesEachEndAtTheirOwnDeadline() async throws {
        try await LocalAPNsFixture.run(requestTimeout: .seconds(2)) { fixture in
            #expect(await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials).status == 200)
            fixture.server.fail(.stall, times: 2)
            // Each push: its name, its answer, and how long it waited for it.
            let ended = await withTaskGroup(of: (String, APNsResponse, Duration).self) { group in
                func send(_ name: String) {
                    group.addTask {
                        let sent = ContinuousClock.now
                        let response = await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials)
                        return (name, response, ContinuousClock.now - sent)
                    }
                }
                send("first")
                try? await Task.sleep(for: .seconds(1))
                send("second")
                while fixture.server.stalled < 2 { try? await Task.sleep(for: .milliseconds(10)) }
                // Answered while both wait: the deadlines are not disturbed by it.
                send("answered")
                var ended: [(String, APNsResponse, Duration)] = []
                for await answer in group { ended.append(answer) }
                return ended
            }
            #expect(ended.first { $0.0 == "answered" }?.1.status == 200)
            let stalls = ended.filter { $0.0 != "answered" }
            #expect(stalls.map(\.0) == ["first", "second"])
            // Each ends at its own deadline: the second is not cut at the first's, a second earlier.
            for (name, _, waited) in stalls { #expect(waited >= .milliseconds(1_900), "\(name) waited \(waited)") }
            for (_, response, _) in stalls {
                guard case .unanswered(let why) = response else {
                    Issue.record("expected no answer, got \(response)")
                    continue
                }
                #expect(why.contains("did not answer within"))
            }
        }
    }

    @Test func aGoAwayIsRetriedOnANewConnection() async throws {
        try await LocalAPNsFixture.run { fixture in
            #expect(await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials).status == 200)
            fixture.server.fail(.goAway(reason: "Shutdown"))
            let refused = await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials)
            #expect(APNsVerdict(refused) == .retry(renewToken: false))
            #expect(await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials).status == 200)
            let connections = fixture.server.received.map(\.connection)
            #expect(connections.count == 2)
            #expect(connections.first != connections.last)
        }
    }

    @Test(
        "what a sender does with each of Apple's answers",
        arguments: [
            (200, nil, APNsVerdict.delivered),
            (400, "BadDeviceToken", .invalidateToken(since: nil)),
            (400, "DeviceTokenNotForTopic", .invalidateToken(since: nil)),
            (400, "BadCollapseId", .fail),
            (400, "BadExpirationDate", .fail),
            (400, "BadMessageId", .fail),
            (400, "BadPriority", .fail),
            (400, "BadTopic", .suspendApp),
            (400, "DuplicateHeaders", .fail),
            (400, "InvalidPushType", .fail),
            (400, "MissingDeviceToken", .fail),
            (400, "MissingTopic", .suspendApp),
            (400, "PayloadEmpty", .fail),
            (400, "TopicDisallowed", .suspendApp),
            (400, "IdleTimeout", .retry(renewToken: false)),
            (403, "ExpiredProviderToken", .retry(renewToken: true)),
            (403, "InvalidProviderToken", .suspendApp),
            (403, "MissingProviderToken", .suspendApp),
            (403, "BadCertificate", .suspendApp),
            (403, "BadCertificateEnvironment", .suspendApp),
            (403, "Forbidden", .suspendApp),
            (403, "UnrelatedKeyIdInToken", .suspendApp),
            (404, "BadPath", .fail),
            (405, "MethodNotAllowed", .fail),
            (410, "Unregistered", .invalidateToken(since: nil)),
            (410, "ExpiredToken", .invalidateToken(since: nil)),
            (413, "PayloadTooLarge", .fail),
            (429, "TooManyRequests", .retry(renewToken: false)),
            (429, "TooManyProviderTokenUpdates", .retry(renewToken: false)),
            (500, "InternalServerError", .retry(renewToken: false)),
            (503, "ServiceUnavailable", .retry(renewToken: false)),
            (503, "Shutdown", .retry(renewToken: false)),
        ] as [(Int, String?, APNsVerdict)]
    )
    func verdicts(status: Int, reason: String?, verdict: APNsVerdict) {
        #expect(APNsVerdict(.answered(status: status, reason: reason, tokenInvalidSince: nil, apnsID: nil)) == verdict)
    }

    @Test func noAnswerIsRetried() {
        #expect(APNsVerdict(.unanswered("connection reset")) == .retry(renewToken: false))
    }
}

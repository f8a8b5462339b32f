import AsyncHTTPClient
import CanonicalJSON
import Crypto
import Delivery
import EventStore
import Foundation
import LocalAPNs
import NIOConcurrencyHelpers
import NIOHTTP1
import Testing

/// The local APNs checks what Apple checks, over real HTTP/2 and TLS, and answers with Apple's
/// statuses and reasons.
@Suite struct LocalAPNsTests {
    struct Case: CustomTestStringConvertible, Sendable {
        let name: String
        var path = "/3/device/" + LocalAPNsFixture.token
        var headers = LocalAPNsFixture.validHeaders
        var body = #"{"aps":{"timestamp":1800000000,"event":"update","content-state":{}}}"#
        let status: Int
        let reason: String?
        var testDescription: String { name }
    }

    static let topic = ("apns-topic", LocalAPNsFixture.bundleID + ".push-type.liveactivity")
    static let pushType = ("apns-push-type", "liveactivity")

    static let cases: [Case] = [
        Case(name: "a valid push", status: 200, reason: nil),
        Case(name: "a path that is not /3/device/", path: "/3/devices/ab", status: 404, reason: "BadPath"),
        Case(name: "no token in the path", path: "/3/device/", status: 400, reason: "MissingDeviceToken"),
        Case(name: "a token that is not 64 hex digits", path: "/3/device/abcd", status: 400, reason: "BadDeviceToken"),
        Case(
            name: "no provider token",
            headers: [("authorization", "")] + validHeaders,
            status: 403,
            reason: "MissingProviderToken"
        ),
        Case(
            name: "a provider token that is not a JWT",
            headers: [("authorization", "bearer x.y.z")],
            status: 403,
            reason: "InvalidProviderToken"
        ),
        Case(name: "no topic", headers: [pushType], status: 400, reason: "MissingTopic"),
        Case(name: "no push type", headers: [topic], status: 400, reason: "InvalidPushType"),
        Case(
            name: "an alert push type",
            headers: [topic, ("apns-push-type", "alert")],
            status: 400,
            reason: "InvalidPushType"
        ),
        Case(
            name: "a topic without the Live Activity suffix",
            headers: [pushType, ("apns-topic", LocalAPNsFixture.bundleID)],
            status: 400,
            reason: "BadTopic"
        ),
        Case(
            name: "another app's topic",
            headers: [pushType, ("apns-topic", "com.other.push-type.liveactivity")],
            status: 400,
            reason: "TopicDisallowed"
        ),
        Case(name: "priority 7", headers: validHeaders + [("apns-priority", "7")], status: 400, reason: "BadPriority"),
        Case(name: "priority 5", headers: validHeaders + [("apns-priority", "5")], status: 200, reason: nil),
        Case(
            name: "an expiration that is not a number",
            headers: validHeaders + [("apns-expiration", "soon")],
            status: 400,
            reason: "BadExpirationDate"
        ),
        Case(
            name: "an uppercase apns-id",
            headers: validHeaders + [("apns-id", "6F0B8E3A-1D2C-8E4F-9A5B-0C1D2E3F4A5B")],
            status: 400,
            reason: "BadMessageId"
        ),
        Case(
            name: "a collapse id over 64 bytes",
            headers: validHeaders + [("apns-collapse-id", String(repeating: "c", count: 65))],
            status: 400,
            reason: "BadCollapseId"
        ),
        Case(name: "an empty body", body: "", status: 400, reason: "PayloadEmpty"),
        Case(
            name: "a body over 4096 bytes",
            body: #"{"aps":{"timestamp":1800000000,"event":"update","content-state":{"x":""#
                + String(repeating: "x", count: 4096) + #""}}}"#,
            status: 413,
            reason: "PayloadTooLarge"
        ),
        Case(name: "a body that is not JSON", body: "aps", status: 400, reason: "BadPayload"),
        Case(
            name: "no content-state",
            body: #"{"aps":{"timestamp":1800000000,"event":"update"}}"#,
            status: 400,
            reason: "BadPayload"
        ),
        Case(
            name: "a timestamp in milliseconds",
            body: #"{"aps":{"timestamp":1800000000000,"event":"update","content-state":{}}}"#,
            status: 400,
            reason: "BadPayload"
        ),
        Case(
            name: "an unknown event",
            body: #"{"aps":{"timestamp":1800000000,"event":"begin","content-state":{}}}"#,
            status: 400,
            reason: "BadPayload"
        ),
        Case(
            name: "a start without an alert",
            body:
                #"{"aps":{"timestamp":1800000000,"event":"start","content-state":{},"attributes-type":"A","attributes":{}}}"#,
            status: 400,
            reason: "BadPayload"
        ),
    ]
    static let validHeaders = LocalAPNsFixture.validHeaders

    static let reload = #"{"aps":{"content-changed":true}}"#
    static func reloadHeaders(_ pushType: String, topic suffix: String? = nil) -> [(String, String)] {
        [
            ("apns-push-type", pushType),
            ("apns-topic", LocalAPNsFixture.bundleID + ".push-type." + (suffix ?? pushType)),
        ]
    }

    /// Widget (iOS 26) and control (iOS 18) reloads: their own push type and topic, and a body
    /// that only says the content changed.
    static let reloadCases: [Case] = [
        Case(name: "a widget reload", headers: reloadHeaders("widgets"), body: reload, status: 200, reason: nil),
        Case(name: "a control reload", headers: reloadHeaders("controls"), body: reload, status: 200, reason: nil),
        Case(
            name: "a widget reload at priority 5",
            headers: reloadHeaders("widgets") + [("apns-priority", "5")],
            body: reload,
            status: 200,
            reason: nil
        ),
        Case(
            name: "push type widget, not widgets",
            headers: reloadHeaders("widget", topic: "widgets"),
            body: reload,
            status: 400,
            reason: "InvalidPushType"
        ),
        Case(
            name: "a widget push on the Live Activity topic",
            headers: reloadHeaders("widgets", topic: "liveactivity"),
            body: reload,
            status: 400,
            reason: "InvalidPushType"
        ),
        Case(
            name: "a Live Activity push on the widgets topic",
            headers: [pushType, ("apns-topic", LocalAPNsFixture.bundleID + ".push-type.widgets")],
            status: 400,
            reason: "InvalidPushType"
        ),
        Case(
            name: "a control push on the widgets topic",
            headers: reloadHeaders("controls", topic: "widgets"),
            body: reload,
            status: 400,
            reason: "InvalidPushType"
        ),
        Case(
            name: "a widget push on the bundle id alone",
            headers: [("apns-push-type", "widgets"), ("apns-topic", LocalAPNsFixture.bundleID)],
            body: reload,
            status: 400,
            reason: "DeviceTokenNotForTopic"
        ),
        Case(
            name: "a control push to another app's topic",
            headers: [("apns-push-type", "controls"), ("apns-topic", "com.other.push-type.controls")],
            body: reload,
            status: 400,
            reason: "TopicDisallowed"
        ),
        Case(
            name: "a reload without content-changed",
            headers: reloadHeaders("widgets"),
            body: #"{"aps":{}}"#,
            status: 400,
            reason: "BadPayload"
        ),
        Case(
            name: "a reload with content-changed false",
            headers: reloadHeaders("controls"),
            body: #"{"aps":{"content-changed":false}}"#,
            status: 400,
            reason: "BadPayload"
        ),
        Case(
            name: "a Live Activity body sent as a widget reload",
            headers: reloadHeaders("widgets"),
            body: #"{"aps":{"content-changed":true,"timestamp":1800000000,"event":"update","content-state":{}}}"#,
            status: 400,
            reason: "BadPayload"
        ),
        Case(
            name: "Apple's sample with its stray comma",
            headers: reloadHeaders("widgets"),
            body: #"{"aps":{"content-changed":true,}}"#,
            status: 400,
            reason: "BadPayload"
        ),
    ]

    @Test("what APNs checks of widget and control reloads", arguments: reloadCases)
    func reloadChecks(_ example: Case) async throws {
        try await LocalAPNsFixture.run { fixture in
            let response = try await fixture.raw(path: example.path, headers: example.headers, body: example.body)
            #expect(response.status == example.status)
            #expect(response.reason == example.reason)
            let received = fixture.server.received
            #expect(received.count == (example.status == 200 ? 1 : 0))
            #expect(received.allSatisfy { $0.pushType == example.headers.first { $0.0 == "apns-push-type" }?.1 })
        }
    }

    @Test("what APNs checks", arguments: cases)
    func checks(_ example: Case) async throws {
        try await LocalAPNsFixture.run { fixture in
            let response = try await fixture.raw(path: example.path, headers: example.headers, body: example.body)
            #expect(response.status == example.status)
            #expect(response.reason == example.reason)
            #expect(fixture.server.received.count == (example.status == 200 ? 1 : 0))
        }
    }

    @Test func theMethodMustBePOST() async throws {
        try await LocalAPNsFixture.run { fixture in
            let response = try await fixture.raw(method: .PUT, headers: Self.validHeaders)
            #expect(response.status == 405)
            #expect(response.reason == "MethodNotAllowed")
        }
    }

    @Test func aProviderTokenSignedByAnotherKeyIsInvalid() async throws {
        try await LocalAPNsFixture.run { fixture in
            let impostor = try APNsCredentials(
                teamID: LocalAPNsFixture.teamID,
                keyID: LocalAPNsFixture.keyID,
                environment: .sandbox,
                privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation
            )
            let jwt = try ProviderToken(credentials: impostor, now: fixture.clock.now).jwt
            let response = try await fixture.raw(headers: [("authorization", "bearer " + jwt)] + Self.validHeaders)
            #expect(response.reason == "InvalidProviderToken")
        }
    }

    @Test func aProviderTokenNamingAnotherTeamIsInvalid() async throws {
        try await LocalAPNsFixture.run { fixture in
            let otherTeam = try APNsCredentials(
                teamID: "TEAM000002",
                keyID: LocalAPNsFixture.keyID,
                environment: .sandbox,
                privateKeyPEM: fixture.credentials.privateKey.pemRepresentation
            )
            let jwt = try ProviderToken(credentials: otherTeam, now: fixture.clock.now).jwt
            let response = try await fixture.raw(headers: [("authorization", "bearer " + jwt)] + Self.validHeaders)
            #expect(response.reason == "InvalidProviderToken")
        }
    }

    @Test func aProviderTokenOverAnHourOldHasExpired() async throws {
        try await LocalAPNsFixture.run { fixture in
            let jwt = try ProviderToken(credentials: fixture.credentials, now: fixture.clock.now).jwt
            fixture.clock.advance(.seconds(3601))
            let response = try await fixture.raw(headers: [("authorization", "bearer " + jwt)] + Self.validHeaders)
            #expect(response.status == 403)
            #expect(response.reason == "ExpiredProviderToken")
            #expect(APNsVerdict(response) == .retry(renewToken: true))
        }
    }

    @Test func aNewProviderTokenWithinTwentyMinutesOnOneConnectionIsRefused() async throws {
        try await LocalAPNsFixture.run { fixture in
            let connection = try fixture.rawConnection()
            #expect(try await fixture.raw(headers: Self.validHeaders, on: connection).status == 200)
            fixture.clock.advance(.seconds(19 * 60))
            let early = try await fixture.raw(headers: Self.validHeaders, on: connection)
            #expect(early.status == 429)
            #expect(early.reason == "TooManyProviderTokenUpdates")
            fixture.clock.advance(.seconds(60))
            #expect(try await fixture.raw(headers: Self.validHeaders, on: connection).status == 200)
            try await connection.shutdown()
        }
    }

    @Test func anUnregisteredTokenIsAnswered410WithWhenItStoppedBeingValid() async throws {
        try await LocalAPNsFixture.run { fixture in
            fixture.server.unregister(deviceToken: LocalAPNsFixture.token, at: 1_799_999_000_123)
            let response = await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials)
            guard case .answered(410, "Unregistered", let since, _) = response else {
                Issue.record("expected 410 Unregistered, got \(response)")
                return
            }
            #expect(since == Timestamp(microsecondsSince1970: 1_799_999_000_123_000))
            #expect(APNsVerdict(response) == .invalidateToken(since: since))
        }
    }

    @Test("a local APNs that runs for days (liveline dev) keeps none of the pushes it accepts, and hands each on")
    func keepingNothing() async throws {
        let handedOn = NIOLockedValueBox<[LocalAPNs.Accepted]>([])
        let handOn: @Sendable (LocalAPNs.Accepted) -> Void = { accepted in
            handedOn.withLockedValue { $0.append(accepted) }
        }
        try await LocalAPNsFixture.run(keepingAccepted: false, onAccept: handOn) { fixture in
            for _ in 0..<3 {
                let response = await fixture.client.send(LocalAPNsFixture.push(), with: fixture.credentials)
                #expect(APNsVerdict(response) == .delivered)
            }
            #expect(fixture.server.received.isEmpty)
            #expect(handedOn.withLockedValue { $0.count } == 3)
            guard case .push(let push)? = handedOn.withLockedValue({ $0.last }) else {
                Issue.record("expected a push handed on")
                return
            }
            #expect(push.deviceToken == LocalAPNsFixture.token)
        }
    }
}

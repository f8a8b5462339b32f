import AsyncHTTPClient
import CanonicalJSON
import Delivery
import LocalAPNs
import NIOHTTP1
import Testing

/// The local APNs' channel management and broadcasts, checked as Apple checks them.
struct LocalBroadcastTests {
    static let channels = "/1/apps/\(LocalAPNsFixture.bundleID)/channels"
    static let broadcast = "/4/broadcasts/apps/\(LocalAPNsFixture.bundleID)"
    static let update = #"{"aps":{"timestamp":1800000000,"event":"update","content-state":{}}}"#

    /// Creates a channel with `policy` (0 or 1) and returns its id.
    static func create(_ policy: Int, on fixture: LocalAPNsFixture) async throws -> String {
        let answer = try await fixture.rawAnswer(
            path: channels,
            headers: [("content-type", "application/json")],
            body: #"{"message-storage-policy":\#(policy),"push-type":"LiveActivity"}"#
        )
        #expect(answer.status == 201)
        return try #require(answer.headers.first(name: "apns-channel-id"))
    }

    static func broadcastHeaders(_ channel: String?, expiration: String = "0") -> [(String, String)] {
        [("apns-push-type", "liveactivity"), ("apns-expiration", expiration), ("apns-priority", "10")]
            + (channel.map { [("apns-channel-id", $0)] } ?? [])
    }

    @Test func aChannelIsCreatedReadListedAndDeleted() async throws {
        try await LocalAPNsFixture.run { fixture in
            let id = try await Self.create(1, on: fixture)
            let read = try await fixture.rawAnswer(
                path: Self.channels,
                method: .GET,
                headers: [("apns-channel-id", id)],
                body: ""
            )
            #expect(read.status == 200)
            #expect(
                try JSONParser.parse(read.body)
                    == .object(["message-storage-policy": .number(1), "push-type": .string("LiveActivity")])
            )
            let all = try await fixture.rawAnswer(
                path: "/1/apps/\(LocalAPNsFixture.bundleID)/all-channels",
                method: .GET,
                headers: [],
                body: ""
            )
            #expect(try JSONParser.parse(all.body) == .object(["channels": .array([.string(id)])]))
            let deleted = try await fixture.rawAnswer(
                path: Self.channels,
                method: .DELETE,
                headers: [("apns-channel-id", id)],
                body: ""
            )
            #expect(deleted.status == 204)
            #expect(fixture.server.channels(of: LocalAPNsFixture.bundleID).isEmpty)
        }
    }

    @Test(
        "what APNs checks of channel requests",
        arguments: [
            (#"{"message-storage-policy":2,"push-type":"LiveActivity"}"#, "BadRequestParams"),
            (#"{"message-storage-policy":0,"push-type":"Alert"}"#, "BadRequestParams"),
            (#"{"push-type":"LiveActivity"}"#, "BadRequestParams"),
        ]
    )
    func channelBodies(_ body: String, _ reason: String) async throws {
        try await LocalAPNsFixture.run { fixture in
            let response = try await fixture.raw(path: Self.channels, headers: [], body: body)
            #expect(response.status == 400 && response.reason == reason)
        }
    }

    @Test func aBroadcastGoesOnARegisteredChannelOnly() async throws {
        try await LocalAPNsFixture.run { fixture in
            let none = try await Self.create(0, on: fixture)
            let stored = try await Self.create(1, on: fixture)
            func send(_ headers: [(String, String)], _ body: String = Self.update) async throws -> String? {
                let response = try await fixture.raw(path: Self.broadcast, headers: headers, body: body)
                return response.status == 200 ? "200" : response.reason
            }
            #expect(try await send(Self.broadcastHeaders(nil)) == "MissingChannelId")
            #expect(try await send(Self.broadcastHeaders("not base64!")) == "BadChannelId")
            #expect(try await send(Self.broadcastHeaders("dW5rbm93bg==")) == "ChannelNotRegistered")
            // A channel that stores nothing takes only broadcasts that expire at once.
            #expect(try await send(Self.broadcastHeaders(none, expiration: "1800000600")) == "BadExpirationDate")
            #expect(try await send(Self.broadcastHeaders(none)) == "200")
            #expect(try await send(Self.broadcastHeaders(stored, expiration: "1800000600")) == "200")
            // Broadcast cannot start an activity.
            let start =
                #"{"aps":{"timestamp":1800000000,"event":"start","content-state":{},"attributes-type":"A","attributes":{},"alert":{"title":"t","body":"b"}}}"#
            #expect(try await send(Self.broadcastHeaders(stored), start) == "BadRequestParams")
            let large =
                #"{"aps":{"timestamp":1800000000,"event":"update","content-state":{"x":"\#(String(repeating: "x", count: 5100))"}}}"#
            #expect(try await send(Self.broadcastHeaders(stored), large) == "PayloadTooLarge")
            #expect(fixture.server.broadcasts.map(\.channelID) == [none, stored])
            #expect(fixture.server.received.isEmpty)
        }
    }

    @Test func anAppWithoutBroadcastIsRefusedFeatureNotEnabled() async throws {
        try await LocalAPNsFixture.run { fixture in
            fixture.server.setBroadcastEnabled(false, for: LocalAPNsFixture.bundleID)
            let response = try await fixture.raw(
                path: Self.channels,
                headers: [],
                body: #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#
            )
            #expect(response.status == 400 && response.reason == "FeatureNotEnabled")
        }
    }
}

import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventStore
import LocalAPNs
import Testing

/// Broadcast channels end to end: a real database, the local APNs over HTTP/2 and TLS, channels
/// managed through its channel management API and activities on them updated by broadcast.
@Suite(.serialized) struct BroadcastDeliveryTests {
    static func request(on channel: StoredChannel, store: EventStore) async throws -> Command {
        var request = Command.Request(
            activityType: "MatchAttributes",
            content: ActivityContent(contentState: JSONObject(["step": .number(0)])),
            pushType: .channel
        )
        let known = try await store.channel(channel.id, of: channel.app)
        request.channel = BroadcastChannel(id: channel.id, storagePolicy: known?.storagePolicy)
        return .request(request)
    }

    @Test func channelsAreCreatedListedAndDeletedAtAPNsAndAudited() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withChannels(in: store) { channels in
                let stored = try await channels.create(for: fixture.app, storagePolicy: .none, by: .adminAPI)
                let kept = try await channels.create(for: fixture.app, storagePolicy: .mostRecent, by: .adminAPI)
                #expect(fixture.server.channels(of: DeliveryFixture.bundleID) == [stored.id, kept.id])
                #expect(stored.environment == .sandbox && stored.storagePolicy == .none && stored.deletedAt == nil)
                #expect(try await store.channels(of: fixture.app).map(\.id).sorted() == [stored.id, kept.id].sorted())

                let listing = try await channels.list(of: fixture.app)
                #expect(listing.environment == .sandbox)
                #expect(Set(listing.channels.map(\.id)) == [stored.id, kept.id])
                #expect(
                    listing.channels.first { $0.id == stored.id }?.recorded?.storagePolicy == MessageStoragePolicy.none
                )

                let deleted = try await channels.delete(stored.id, of: fixture.app, by: .adminAPI)
                #expect(deleted.deletedAt != nil)
                #expect(fixture.server.channels(of: DeliveryFixture.bundleID) == [kept.id])
                #expect(try await store.channels(of: fixture.app).map(\.id) == [kept.id])
                await #expect(throws: ChannelManagementError.unknownChannel(stored.id)) {
                    try await channels.delete(stored.id, of: fixture.app, by: .adminAPI)
                }

                let trail = try await store.adminChanges(of: fixture.app, limit: 10).map(\.action)
                #expect(Array(trail.prefix(3)) == ["channel.deleted", "channel.created", "channel.created"])
            }
        }
    }

    @Test func aChannelGoneAtAPNsIsRecordedDeleted() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withChannels(in: store) { channels in
                let stored = try await channels.create(for: fixture.app, storagePolicy: .mostRecent, by: .adminAPI)
                // Deleted by someone else, straight at APNs.
                fixture.server.forgetChannel(stored.id, of: DeliveryFixture.bundleID)
                _ = try await channels.delete(stored.id, of: fixture.app, by: .commandLine)
                #expect(try await store.channels(of: fixture.app).isEmpty)
            }
        }
    }

    @Test func refusalsOfChannelManagementSayWhy() async throws {
        try await DeliveryFixture.run(credentials: false) { fixture, store in
            try await fixture.withChannels(in: store) { channels in
                await #expect(throws: ChannelManagementError.noCredentials(fixture.app)) {
                    try await channels.create(for: fixture.app, storagePolicy: .none, by: .adminAPI)
                }
                let ghost = AppID(rawValue: "ghost")!
                await #expect(throws: ChannelManagementError.unknownApp(ghost)) {
                    try await channels.list(of: ghost)
                }
                try await fixture.setCredentials(fixture.key, in: store)
                fixture.server.setBroadcastEnabled(false, for: DeliveryFixture.bundleID)
                await #expect(throws: ChannelManagementError.apnsRefused(status: 400, reason: "FeatureNotEnabled")) {
                    try await channels.create(for: fixture.app, storagePolicy: .none, by: .adminAPI)
                }
                #expect(try await store.channels(of: fixture.app).isEmpty)
            }
        }
    }

    @Test func aChannelActivitysUpdatesAndEndGoAsOneBroadcastEach() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withChannels(in: store) { channels in
                let channel = try await channels.create(for: fixture.app, storagePolicy: .mostRecent, by: .adminAPI)
                try await fixture.withWorkers {
                    let stream = fixture.stream("final")
                    try await fixture.execute(try await Self.request(on: channel, store: store), on: stream, in: store)
                    try await fixture.execute(DeliveryFixture.update(1, priority: .high), on: stream, in: store)
                    try await fixture.eventually("the update is broadcast") {
                        fixture.server.broadcasts.count == 1
                    }
                    try await fixture.execute(.end(.init(dismissal: .default)), on: stream, in: store)
                    try await fixture.eventually("the end is broadcast") {
                        fixture.server.broadcasts.count == 2
                    }
                    let (update, end) = (fixture.server.broadcasts[0], fixture.server.broadcasts[1])
                    #expect(update.channelID == channel.id && update.bundleID == DeliveryFixture.bundleID)
                    #expect(update.priority == 10 && update.expiration > 0)
                    #expect(String(decoding: update.body, as: UTF8.self).contains(#""event":"update""#))
                    #expect(String(decoding: end.body, as: UTF8.self).contains(#""event":"end""#))
                    #expect(fixture.server.received.isEmpty)
                    try await fixture.eventually("both are recorded delivered, naming the channel") {
                        let delivered = try await store.deliveries(of: stream).filter { $0.outcome == .delivered }
                        return delivered.count == 2 && delivered.allSatisfy { $0.channelID == channel.id }
                    }
                }
            }
        }
    }

    @Test func aNoStorageChannelsBroadcastsExpireAtOnceAndADeletedChannelsFail() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withChannels(in: store) { channels in
                let channel = try await channels.create(for: fixture.app, storagePolicy: .none, by: .adminAPI)
                try await fixture.withWorkers {
                    let stream = fixture.stream("live")
                    try await fixture.execute(try await Self.request(on: channel, store: store), on: stream, in: store)
                    try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                    try await fixture.eventually("the update is broadcast, to expire at once") {
                        fixture.server.broadcasts.map(\.expiration) == [0]
                    }
                    _ = try await channels.delete(channel.id, of: fixture.app, by: .adminAPI)
                    try await fixture.execute(DeliveryFixture.update(2), on: stream, in: store)
                    try await fixture.eventually("a broadcast on the deleted channel fails, saying why") {
                        try await store.deliveries(of: stream).contains {
                            $0.outcome == .failed && $0.version == 3 && $0.reason == "ChannelNotRegistered"
                        }
                    }
                }
            }
        }
    }

    @Test func aRemoteStartSubscribesTheActivityToItsChannel() async throws {
        try await DeliveryFixture.run { fixture, store in
            try await fixture.withChannels(in: store) { channels in
                let channel = try await channels.create(for: fixture.app, storagePolicy: .mostRecent, by: .adminAPI)
                try await fixture.withWorkers {
                    let startToken = DeliveryFixture.token(90)
                    guard case .request(var request) = try await Self.request(on: channel, store: store) else { return }
                    request.deviceID = DeviceID(rawValue: "phone-9")
                    request.remoteStart = RemoteStart(
                        pushToStartToken: startToken,
                        alert: Alert(title: "On", body: "Go")
                    )
                    let stream = fixture.stream("subscribed")
                    try await fixture.execute(.request(request), on: stream, in: store)
                    try await fixture.execute(DeliveryFixture.update(1), on: stream, in: store)
                    try await fixture.eventually("the start goes to the device, the update on the channel") {
                        fixture.server.received(by: startToken).count == 1 && fixture.server.broadcasts.count == 1
                    }
                    let deliveries = try await store.deliveries(of: stream).map {
                        "\($0.version) \($0.outcome) \($0.reason ?? "")"
                    }
                    let push = try #require(
                        fixture.server.received(by: startToken).first,
                        "\(deliveries) \(fixture.server.refusals)"
                    )
                    let start = String(decoding: push.body, as: UTF8.self)
                    #expect(start.contains(#""input-push-channel":"\#(channel.id)""#))
                    #expect(!start.contains("input-push-token"))
                }
            }
        }
    }
}

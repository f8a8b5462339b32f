import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import LivelineHTTP
import LocalAPNs
import Testing

@Suite("Broadcast channels over the API: the admin routes and activities on a channel")
struct ChannelsAPITests {
    /// Runs `body` with an app whose credentials are registered at a local APNs.
    static func withApp(
        _ body:
            @Sendable (APIFixture, LocalAPNs, (id: AppID, client: Client, key: Components.Schemas.IssuedKey))
            async throws -> Void
    ) async throws {
        let server = try await LocalAPNs.start()
        do {
            try await APIFixture.run(secretKey: try SecretKey(SecretKey.random()), apns: server) { api in
                let app = try await api.makeApp()
                try await api.setCredentials(of: app.id, registeredWith: server)
                try await body(api, server, app)
            }
        } catch {
            try? await server.shutdown()
            throw error
        }
        try await server.shutdown()
    }

    @Test("a channel is created at APNs (201), listed, and deleted by its percent-encoded id (204); each is audited")
    func createListDelete() async throws {
        try await Self.withApp { api, server, app in
            let path = Operations.CreateChannel.Input.Path(appId: app.id.rawValue)
            // APNs' ids are base64: make one with a '/' or '+', which the path must carry encoded.
            var created: [Components.Schemas.Channel] = []
            while !(created.last.map { $0.channelId.contains("/") || $0.channelId.contains("+") } ?? false),
                created.count < 30
            {
                created.append(
                    try await api.admin.createChannel(path: path, body: .json(.init(messageStoragePolicy: .mostRecent)))
                        .created.body.json
                )
            }
            let channel = try #require(created.last)
            #expect(channel.environment == .sandbox && channel.messageStoragePolicy == .mostRecent)
            #expect(server.channels(of: "com.example.\(app.id)") == Set(created.map(\.channelId)))

            let listed = try await api.admin.listChannels(path: .init(appId: app.id.rawValue)).ok.body.json
            #expect(listed.environment == .sandbox)
            #expect(Set(listed.channels.map(\.channelId)) == Set(created.map(\.channelId)))
            #expect(listed.channels.allSatisfy { $0.messageStoragePolicy == .mostRecent && $0.createdAt != nil })

            _ = try await api.admin.deleteChannel(
                path: .init(appId: app.id.rawValue, channelId: channel.channelId)
            ).noContent
            #expect(!server.channels(of: "com.example.\(app.id)").contains(channel.channelId))
            let again = try await api.admin.deleteChannel(
                path: .init(appId: app.id.rawValue, channelId: channel.channelId)
            )
            #expect(try again.notFound.body.applicationProblemJson.code == "channel_not_found")

            let actions = try await api.store.adminChanges(of: app.id, limit: 100).map(\.action)
            #expect(actions.first == "channel.deleted")
            #expect(actions.filter { $0 == "channel.created" }.count == created.count)
        }
    }

    @Test("channel requests without credentials, of an unknown app, refused by APNs, or without a secret key say why")
    func refusals() async throws {
        try await Self.withApp { api, server, app in
            let body = Operations.CreateChannel.Input.Body.json(.init(messageStoragePolicy: .none))
            let other = try await api.makeApp()
            let missing = try await api.admin.createChannel(path: .init(appId: other.id.rawValue), body: body)
            #expect(try missing.conflict.body.applicationProblemJson.code == "apns_credentials_missing")
            let ghost = try await api.admin.listChannels(path: .init(appId: "ghost"))
            #expect(try ghost.notFound.body.applicationProblemJson.code == "app_not_found")
            server.setBroadcastEnabled(false, for: "com.example.\(app.id)")
            let refused = try await api.admin.createChannel(path: .init(appId: app.id.rawValue), body: body)
            let problem = try refused.badGateway.body.applicationProblemJson
            #expect(problem.code == "apns_refused")
            #expect(problem.detail("reason") == .string("FeatureNotEnabled"))
        }
        try await APIFixture.run { api in
            let app = try await api.makeApp()
            let response = try await api.admin.createChannel(
                path: .init(appId: app.id.rawValue),
                body: .json(.init(messageStoragePolicy: .none))
            )
            #expect(try response.serviceUnavailable.body.applicationProblemJson.code == "secret_key_not_configured")
        }
    }

    @Test("an activity on a channel: accepted on one of the app's channels, refused on another, recorded")
    func activities() async throws {
        try await Self.withApp { api, _, app in
            let channel = try await api.admin.createChannel(
                path: .init(appId: app.id.rawValue),
                body: .json(.init(messageStoragePolicy: .none))
            ).created.body.json
            let accepted = try await app.client.requestActivity(
                body: .json(
                    .init(activityType: "Match", contentState: .empty, channelId: channel.channelId)
                )
            ).created.body.json
            #expect(accepted.pushType == .channel)
            let read = try await app.client.getActivity(path: .init(activityId: accepted.activityId.rawValue)).ok
            #expect(try read.body.json.channelId == channel.channelId)
            let events = try await api.store.events(of: StreamID(app: app.id, activity: accepted.activityId))
            guard case .requested(let requested) = events.first?.event.payload else {
                Issue.record("no request")
                return
            }
            #expect(
                requested.channel == BroadcastChannel(id: channel.channelId, storagePolicy: MessageStoragePolicy.none)
            )

            let unknown = try await app.client.requestActivity(
                body: .json(.init(activityType: "Match", contentState: .empty, channelId: "bm9uZQ=="))
            )
            let problem = try unknown.conflict.body.applicationProblemJson
            #expect(problem.code == "channel_not_found" && problem.detail("channelId") == .string("bm9uZQ=="))
            #expect(try await api.store.rejections(of: app.id, code: "channel_not_found", limit: 10).count == 1)
        }
    }

    @Test("a channel with the wrong pushType, pushType channel without one, and a start by broadcast are refused")
    func badChannelRequests() async throws {
        try await Self.withApp { api, _, app in
            let noChannel = try await app.client.requestActivity(
                body: .json(.init(activityType: "Match", contentState: .empty, pushType: .channel))
            )
            #expect(try noChannel.badRequest.body.applicationProblemJson.detail("field") == .string("/channelId"))
            let tokenType = try await app.client.requestActivity(
                body: .json(.init(activityType: "Match", contentState: .empty, pushType: .token, channelId: "Y2g="))
            )
            #expect(try tokenType.badRequest.body.applicationProblemJson.detail("field") == .string("/pushType"))
            let start = try await app.client.requestActivity(
                body: .json(
                    .init(
                        activityType: "Match",
                        contentState: .empty,
                        remoteStart: .init(alert: .init(title: "Kick-off", body: "Now")),
                        channelId: "Y2g="
                    )
                )
            )
            #expect(try start.unprocessableContent.body.applicationProblemJson.code == "broadcast_cannot_start")
        }
    }
}

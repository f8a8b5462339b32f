import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventStore
import HTTPTypes

extension LivelineAPI {
    func createChannel(_ input: Operations.CreateChannel.Input) async throws -> Operations.CreateChannel.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let app = try Self.appID(input.path.appId)
        let channel = try await channelManager().create(
            for: app,
            storagePolicy: MessageStoragePolicy(body.messageStoragePolicy),
            by: .adminAPI
        )
        return .created(.init(body: .json(.init(channel))))
    }

    func listChannels(_ input: Operations.ListChannels.Input) async throws -> Operations.ListChannels.Output {
        let listing = try await channelManager().list(of: try Self.appID(input.path.appId))
        return .ok(
            .init(
                body: .json(
                    .init(
                        environment: .init(listing.environment),
                        channels: listing.channels.map { entry in
                            .init(
                                channelId: entry.id,
                                messageStoragePolicy: entry.recorded.map { .init($0.storagePolicy) },
                                createdAt: entry.recorded?.createdAt
                            )
                        }
                    )
                )
            )
        )
    }

    func deleteChannel(_ input: Operations.DeleteChannel.Input) async throws -> Operations.DeleteChannel.Output {
        _ = try await channelManager().delete(input.path.channelId, of: try Self.appID(input.path.appId), by: .adminAPI)
        return .noContent(.init())
    }

    /// Channels are managed at APNs with the app's credentials, which the secret key opens.
    private func channelManager() throws -> ChannelManager {
        guard let channels = dependencies.channels else { throw Problem.secretKeyNotConfigured }
        return channels
    }
}

extension MessageStoragePolicy {
    init(_ policy: Components.Schemas.MessageStoragePolicy) {
        switch policy {
        case .none: self = .none
        case .mostRecent: self = .mostRecent
        }
    }
}

extension Components.Schemas.MessageStoragePolicy {
    init(_ policy: MessageStoragePolicy) {
        switch policy {
        case .none: self = .none
        case .mostRecent: self = .mostRecent
        }
    }
}

extension Components.Schemas.Channel {
    init(_ channel: StoredChannel) {
        self.init(
            channelId: channel.id,
            environment: .init(channel.environment),
            messageStoragePolicy: .init(channel.storagePolicy),
            createdAt: channel.createdAt
        )
    }
}

extension Problem {
    /// A channel request that could not be done.
    init(_ error: ChannelManagementError) {
        switch error {
        case .unknownApp(let app):
            self = .appNotFound(app)
        case .noCredentials(let app):
            self.init(
                .conflict,
                code: "apns_credentials_missing",
                detail: "\(error) (PUT /v1/admin/apps/\(app)/apns)",
                details: ["appId": .string(app.rawValue)]
            )
        case .credentialsSealedUnderAnotherSecret(let app):
            self.init(
                .conflict,
                code: "apns_credentials_unreadable",
                detail: "\(error)",
                details: ["appId": .string(app.rawValue)]
            )
        case .unknownChannel(let id):
            self.init(.notFound, code: "channel_not_found", detail: "\(error)", details: ["channelId": .string(id)])
        case .apnsRefused(let status, let reason):
            self.init(
                .badGateway,
                code: "apns_refused",
                detail: "\(error)",
                details: ["status": .number(JSONNumber(status))].merging(reason.map { ["reason": .string($0)] } ?? [:])
                { $1 }
            )
        case .apnsUnavailable:
            self.init(.serviceUnavailable, code: "apns_unavailable", detail: "\(error)")
        }
    }
}

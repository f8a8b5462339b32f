import ActivityLifecycle
import ArgumentParser
import Delivery
import EventStore
import Foundation

extension Apps {
    /// `liveline apps channels …`: an app's broadcast channels, as the admin API manages them.
    struct Channels: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "channels",
            abstract: "Create, list or delete an app's broadcast channels at APNs (iOS 18; needs LIVELINE_SECRET_KEY).",
            subcommands: [Create.self, List.self, Delete.self]
        )

        struct Create: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Create a channel with the app's APNs credentials, and print its id."
            )

            @OptionGroup var app: AppArgument
            @Option(
                name: .customLong("storage-policy"),
                help: "What APNs keeps for an offline device: none, or most-recent (the latest broadcast)."
            )
            var storagePolicy: String
            @OptionGroup var options: ConfigurationOptions

            func validate() throws {
                guard Self.policy(storagePolicy) != nil else {
                    throw ValidationError("--storage-policy must be none or most-recent")
                }
            }

            static func policy(_ text: String) -> MessageStoragePolicy? {
                switch text {
                case "none": MessageStoragePolicy.none
                case "most-recent": .mostRecent
                default: nil
                }
            }

            func run() async throws {
                let (app, policy) = (app.id, Self.policy(storagePolicy)!)
                try await withChannelManager(options) { manager in
                    print(describe(try await manager.create(for: app, storagePolicy: policy, by: .commandLine)))
                }
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "List the channels APNs has for the app, with what Liveline recorded of each."
            )

            @OptionGroup var app: AppArgument
            @OptionGroup var options: ConfigurationOptions

            func run() async throws {
                let app = app.id
                try await withChannelManager(options) { manager in
                    let listing = try await manager.list(of: app)
                    print("\(listing.channels.count) channel(s) of \(app) in \(listing.environment.rawValue)")
                    for entry in listing.channels {
                        print(entry.recorded.map(describe) ?? "\(entry.id)  (not created by Liveline)")
                    }
                }
            }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Delete one of the app's channels at APNs (final) and in Liveline."
            )

            @OptionGroup var app: AppArgument
            @Argument(help: "The channel's id, as APNs gave it.") var channelID: String
            @OptionGroup var options: ConfigurationOptions

            func validate() throws {
                guard StoredChannel.isWellFormedID(channelID) else {
                    throw ValidationError("a channel id is 1–256 base64 characters")
                }
            }

            func run() async throws {
                let (app, id) = (app.id, channelID)
                try await withChannelManager(options) { manager in
                    _ = try await manager.delete(id, of: app, by: .commandLine)
                    print("deleted channel \(id) of \(app)")
                }
            }
        }
    }
}

/// Runs `body` with the channels of `DATABASE_URL`'s apps, managed at the configured APNs hosts.
private func withChannelManager(
    _ options: ConfigurationOptions,
    _ body: @escaping (ChannelManager) async throws -> Void
) async throws {
    try await reportingFailures {
        let command = try CommandEnvironment.make(options)
        let secretKey = try command.requireSecretKey()
        let client = try command.makeAPNsClient()
        do {
            try await command.withStore { store in
                try await body(ChannelManager(store: store, client: client, secretKey: secretKey))
            }
        } catch {
            try? await client.shutdown()
            throw error
        }
        try await client.shutdown()
    }
}

private func describe(_ channel: StoredChannel) -> String {
    let policy = channel.storagePolicy == .none ? "none" : "most-recent"
    return "\(channel.id)  \(channel.environment.rawValue)  storage \(policy)  created \(channel.createdAt)"
}

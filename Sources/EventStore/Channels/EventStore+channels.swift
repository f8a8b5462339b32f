public import ActivityLifecycle

extension EventStore {
    /// Records a channel that APNs created for the app. Audited as `channel.created`.
    /// - Throws: `EventStoreError.unknownApp`.
    public func recordChannelCreated(
        _ id: String,
        of app: AppID,
        environment: APNsEnvironment,
        storagePolicy: MessageStoragePolicy,
        by actor: AdminActor
    ) async throws -> StoredChannel {
        let channel = try await administering(actor) { connection in
            try ChannelQueries.insert(
                app: app,
                id: id,
                environment: environment,
                storagePolicy: storagePolicy,
                connection
            )
        }
        guard let channel else { throw EventStoreError.unknownApp(app) }
        return channel
    }

    /// Records that the channel was deleted; `nil` when the app has no such channel (or it was
    /// deleted already). Audited as `channel.deleted`.
    public func recordChannelDeleted(_ id: String, of app: AppID, by actor: AdminActor) async throws -> StoredChannel? {
        try await administering(actor) { try ChannelQueries.markDeleted(app: app, id: id, $0) }
    }

    /// The app's channel, deleted or not; `nil` when it never had it.
    public func channel(_ id: String, of app: AppID) async throws -> StoredChannel? {
        try await withConnection { try ChannelQueries.channel(app: app, id: id, $0) }
    }

    /// The app's channels that are not deleted, oldest first.
    public func channels(of app: AppID) async throws -> [StoredChannel] {
        try await withConnection { try ChannelQueries.channels(of: app, $0) }
    }
}

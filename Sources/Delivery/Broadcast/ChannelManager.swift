public import ActivityLifecycle
import CanonicalJSON
public import EventStore

/// An app's broadcast channels (iOS 18), managed at APNs (`/1/apps/<bundle id>/channels`, with
/// the app's credentials) and kept in the store, which audits each creation and deletion. An
/// activity requested on a channel is updated and ended by broadcast on it.
public struct ChannelManager: Sendable {
    let store: EventStore
    let client: APNsClient
    let secretKey: SecretKey

    public init(store: EventStore, client: APNsClient, secretKey: SecretKey) {
        self.store = store
        self.client = client
        self.secretKey = secretKey
    }

    /// Asks APNs for a new channel of the app's, and records it.
    public func create(
        for app: AppID,
        storagePolicy: MessageStoragePolicy,
        by actor: AdminActor
    ) async throws -> StoredChannel {
        let (bundleID, credentials) = try await target(app)
        var body = JSONObjectWriter()
        body.add("message-storage-policy", .number(JSONNumber(storagePolicy.apnsValue)))
        body.add("push-type", .string("LiveActivity"))
        let answer = try await exchange(
            "POST",
            "/1/apps/\(bundleID)/channels",
            headers: [("content-type", "application/json")],
            body: body.json,
            credentials: credentials,
            expecting: 201
        )
        guard let id = answer.header("apns-channel-id"), StoredChannel.isWellFormedID(id) else {
            throw ChannelManagementError.apnsRefused(
                status: answer.status,
                reason: "APNs gave no usable apns-channel-id (\(answer.header("apns-channel-id") ?? "none"))"
            )
        }
        return try await store.recordChannelCreated(
            id,
            of: app,
            environment: credentials.environment,
            storagePolicy: storagePolicy,
            by: actor
        )
    }

    /// Deletes the channel at APNs (deletion is final there) and records it. A channel APNs no
    /// longer knows is recorded deleted too.
    public func delete(_ id: String, of app: AppID, by actor: AdminActor) async throws -> StoredChannel {
        guard let channel = try await store.channel(id, of: app), channel.deletedAt == nil else {
            if try await store.app(app) == nil { throw ChannelManagementError.unknownApp(app) }
            throw ChannelManagementError.unknownChannel(id)
        }
        let (bundleID, credentials) = try await target(app)
        do {
            _ = try await exchange(
                "DELETE",
                "/1/apps/\(bundleID)/channels",
                headers: [("apns-channel-id", id)],
                body: [],
                credentials: credentials,
                expecting: 204
            )
        } catch ChannelManagementError.apnsRefused(_, "ChannelNotRegistered") {
            // Gone at APNs already: it is deleted.
        }
        guard let deleted = try await store.recordChannelDeleted(id, of: app, by: actor) else {
            throw ChannelManagementError.unknownChannel(id)
        }
        return deleted
    }

    /// The channels APNs has for the app (in the environment of its credentials), each with
    /// what Liveline recorded of it when it created it.
    public func list(of app: AppID) async throws -> ChannelListing {
        let (bundleID, credentials) = try await target(app)
        let answer = try await exchange(
            "GET",
            "/1/apps/\(bundleID)/all-channels",
            headers: [],
            body: [],
            credentials: credentials,
            expecting: 200
        )
        guard case .object(let members)? = try? JSONParser.parse(answer.body),
            case .array(let values)? = members["channels"]
        else {
            throw ChannelManagementError.apnsRefused(status: answer.status, reason: "APNs sent no channel list")
        }
        let ids = values.compactMap { value -> String? in
            if case .string(let id) = value { id } else { nil }
        }
        let recorded = Dictionary(
            try await store.channels(of: app).map { ($0.id, $0) },
            uniquingKeysWith: { first, _ in first }
        )
        return ChannelListing(
            environment: credentials.environment,
            channels: ids.map { ChannelListing.Entry(id: $0, recorded: recorded[$0]) }
        )
    }

    /// The app's bundle id and credentials.
    private func target(_ app: AppID) async throws -> (String, APNsCredentials) {
        guard let settings = try await store.app(app) else { throw ChannelManagementError.unknownApp(app) }
        let credentials: APNsCredentials?
        do {
            credentials = try await store.apnsCredentials(of: app, openedWith: secretKey)
        } catch EventStoreError.sealedUnderAnotherSecret {
            throw ChannelManagementError.credentialsSealedUnderAnotherSecret(app)
        }
        guard let credentials else { throw ChannelManagementError.noCredentials(app) }
        return (settings.settings.bundleID, credentials)
    }

    private func exchange(
        _ method: String,
        _ path: String,
        headers: [(name: String, value: String)],
        body: [UInt8],
        credentials: APNsCredentials,
        expecting status: Int
    ) async throws -> APNsAnswer {
        switch await client.exchange(method, path, headers: headers, body: body, on: .channels, with: credentials) {
        case .failure(let unanswered):
            throw ChannelManagementError.apnsUnavailable(unanswered.why)
        case .success(let answer) where answer.status == status || (answer.status == 200 && status == 204):
            return answer
        case .success(let answer):
            throw ChannelManagementError.apnsRefused(status: answer.status, reason: answer.reason)
        }
    }
}

/// The channels APNs has for an app.
public struct ChannelListing: Hashable, Sendable {
    public struct Entry: Hashable, Sendable {
        public let id: String
        /// What Liveline recorded when it created the channel; `nil` for a channel made
        /// elsewhere (activities cannot use it).
        public let recorded: StoredChannel?
    }

    public let environment: APNsEnvironment
    public let channels: [Entry]
}

/// Why a channel could not be created, listed or deleted.
public enum ChannelManagementError: Error, Hashable, Sendable, CustomStringConvertible {
    case unknownApp(AppID)
    /// Channels are managed with the app's APNs credentials, which it does not have.
    case noCredentials(AppID)
    /// The app's private key was sealed under another `LIVELINE_SECRET_KEY`.
    case credentialsSealedUnderAnotherSecret(AppID)
    /// The app has no such channel, or it was deleted.
    case unknownChannel(String)
    /// APNs answered with an error: its status and reason.
    case apnsRefused(status: Int, reason: String?)
    /// APNs could not be reached, or did not answer in time.
    case apnsUnavailable(String)

    public var description: String {
        switch self {
        case .unknownApp(let app):
            "No app \(app)."
        case .noCredentials(let app):
            "App \(app) has no APNs credentials: channels are managed with them. Set them first."
        case .credentialsSealedUnderAnotherSecret(let app):
            "App \(app)'s APNs key was sealed under another LIVELINE_SECRET_KEY: set its credentials again."
        case .unknownChannel(let id):
            "The app has no channel \(id) (or it was deleted)."
        case .apnsRefused(let status, let reason):
            "APNs refused the channel request: \(status) \(reason ?? "(no reason)")"
                + (reason == "FeatureNotEnabled"
                    ? ": enable broadcast push for the app in Apple's developer account." : ".")
        case .apnsUnavailable(let why):
            "APNs could not be reached: \(why). Try again."
        }
    }
}

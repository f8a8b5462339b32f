import ActivityLifecycle
import CanonicalJSON
import EventStore
import Logging

/// The delivery worker's ledger: the log, the apps and the delivery tables in PostgreSQL.
struct DatabaseLedger: DeliveryLedger {
    let store: EventStore
    let secretKey: SecretKey
    let workerID: String
    let logger: Logger
    /// Whether events are read with the trace contexts of the requests that appended them.
    var readsTraceContexts = false

    func events(after position: Int64, limit: Int) async throws -> [StoredEvent] {
        try await store.events(after: position, limit: limit, withTraceContexts: readsTraceContexts)
    }

    func histories(_ requests: [StreamID: HistoryRequest]) async throws -> StreamHistories {
        try await store.deliveryHistories(requests, withTraceContexts: readsTraceContexts)
    }

    func app(_ app: AppID, at now: Timestamp) async throws -> AppDelivery? {
        guard let row = try await store.appDelivery(of: app) else { return nil }
        var credentials: APNsCredentials? = nil
        if row.credentialsUpdatedAt != nil {
            do {
                credentials = try await store.apnsCredentials(of: app, openedWith: secretKey)
            } catch EventStoreError.sealedUnderAnotherSecret {
                logger.error(
                    "the app's APNs key was sealed under another LIVELINE_SECRET_KEY: set its credentials again",
                    metadata: ["app.id": "\(app)"]
                )
            }
        }
        return AppDelivery(
            topic: PushRenderer.topic(for: row.bundleID),
            credentials: credentials,
            credentialsUpdatedAt: row.credentialsUpdatedAt,
            suspended: row.suspendedCredentials != nil && row.suspendedCredentials == row.credentialsUpdatedAt,
            readAt: now
        )
    }

    func record(_ pending: DeliveryBook.Pending, cursors: [Int: Int64]) async throws {
        try await store.recordDeliveries(pending.writes, cursors: cursors, worker: workerID)
    }

    func release(_ cursors: [Int: Int64]) async throws {
        try await store.releaseDeliveryShards(cursors, by: workerID)
        logger.debug("gave delivery shards up", metadata: ["shards": "\(cursors.keys.sorted())"])
    }
}

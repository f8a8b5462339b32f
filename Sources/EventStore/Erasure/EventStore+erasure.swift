public import ActivityLifecycle
import CanonicalJSON
public import Foundation

extension EventStore {
    /// How many activities one transaction of an erasure rewrites.
    static let erasureBatch = 100

    /// Records an erasure of `scope` in `app`, removes the device's own rows (its tokens, reload
    /// requests naming it, counts; its reference keeps no id), so that its id is kept nowhere for
    /// the rest, and destroys the keys its activities' archived values were sealed under (an
    /// activity's leaf of the key tree, a device's key); the live activities are then erased by
    /// `eraseNextActivities`. Only dismissed activities are erased.
    ///
    /// - Throws: `ErasureRefusal` when a device is known nowhere, or an activity is not dismissed.
    public func requestErasure(
        _ scope: ErasureScope,
        in app: AppID,
        by requester: ErasureRequester
    ) async throws -> Erasure {
        let id = try await withTransaction { connection in
            // A partition being archived waits, or is waited for (`ArchiveKeyQueries.holdErasures`).
            try ArchiveKeyQueries.holdOffArchiving(connection)
            let reference = try ErasureQueries.reference(of: scope.device, in: app, connection)
            let targets = try ErasureQueries.targets(of: scope, in: app, connection)
            let notDismissed = targets.filter { $0.state != .dismissed }.map(\.activity)
            guard notDismissed.isEmpty else { throw ErasureRefusal.notDismissed(notDismissed) }
            let id = try ErasureQueries.record(
                scope,
                in: app,
                reference: reference,
                targets: targets.map(\.activity),
                by: requester,
                connection
            )
            let deviceRows = try scope.device.map {
                try ErasureQueries.eraseDevice($0, in: app, erasure: id, connection)
            }
            let referenced = try ErasureQueries.destroyKeys(of: scope, in: app, reference: reference, connection)
            // Nothing to erase: the transaction, and the erasure with it, is rolled back.
            if let device = scope.device, targets.isEmpty, deviceRows == false, !referenced {
                throw ErasureRefusal.deviceNotFound(device)
            }
            return id
        }
        return try await erasure(id, in: app)!
    }

    /// Erases the next activities still to be erased (of the oldest erasure unfinished, at most
    /// `erasureBatch`) in one transaction, and finishes the erasure with its last; how many it
    /// erased (0: none was waiting). A process that stopped half-way leaves them for this.
    public func eraseNextActivities() async throws -> Int {
        try await withTransaction { try ErasureQueries.eraseNext(limit: Self.erasureBatch, $0) }
    }

    /// Erases until no activity waits: what a request does at once, and the log's maintenance
    /// after a restart.
    public func eraseWaitingActivities() async throws {
        while try await eraseNextActivities() > 0 {}
    }

    /// The erasure `id` of `app` (of any app when `nil`), with how far it got.
    public func erasure(_ id: Int64, in app: AppID? = nil) async throws -> Erasure? {
        try await withConnection { try ErasureQueries.erasure(id, in: app, $0) }
    }

    /// How many activities of the live log an erasure redacted.
    public func erasedStreamCount() async throws -> Int {
        try await withConnection { try ErasureQueries.erasedStreamCount($0) }
    }

    /// The erasures of these activities, by activity: how `verify` and `audit` tell an erased
    /// stream from a damaged one.
    public func erasures(of streams: [StreamID]) async throws -> [StreamID: Erasure] {
        try await withConnection { try ErasureQueries.erasures(of: streams, $0) }
    }

    /// The erasure of the device `reference` stands for (the newest): how `audit` finds the
    /// erasure of an activity only archives hold, which names its device by that reference.
    public func erasure(ofDevice reference: UUID, in app: AppID) async throws -> Erasure? {
        try await withConnection { try ErasureQueries.erasure(ofDevice: reference, in: app, $0) }
    }
}

public import ActivityLifecycle
public import CanonicalJSON

extension EventStore {
    /// Accepts a request to reload `target` on the app's devices: one row, however many devices,
    /// announced to the workers, which fan it out. Under an idempotency key it has seen, the first
    /// answer (`isReplay`); a request an activity's event made before is answered the same way.
    ///
    /// - Throws: `EventStoreError.idempotencyKeyReused` when the key came with another request.
    public func requestReload(
        _ target: ReloadTarget,
        for app: AppID,
        from source: ReloadSource
    ) async throws -> AcceptedReload {
        try await withTransaction { try ReloadQueries.request(target, for: app, from: source, $0) }
    }

    /// The app's reload request `id`, with its devices counted by where each stands; `nil` when
    /// the app has none such.
    public func reloadStatus(_ id: Int64, of app: AppID) async throws -> ReloadStatus? {
        try await withConnection { try ReloadQueries.status(of: id, app: app, $0) }
    }

    /// What `liveline verify` checks of reloads: the slots against their changes, the outcomes
    /// against their requests.
    public func checkReloads() async throws -> ReloadCheck {
        try await withConnection { try ReloadCheckQueries.check($0) }
    }

    /// The widget reloads the activity's updates and ends asked for, in event order.
    public func reloads(askedBy stream: StreamID) async throws -> [ReloadStatus] {
        try await withConnection { try ReloadQueries.asked(by: stream, $0) }
    }
}

/// What the reload workers read and write: the shards they hold under leases, the reloads to
/// send, and their outcomes.
extension EventStore {
    /// Says `worker` is alive, and renews its leases on reload shards: how many workers are alive,
    /// and the shards it still holds.
    public func renewReloadLeases(of worker: String, lease: Duration) async throws -> (living: Int, held: Set<Int>) {
        try await withConnection { connection in
            (
                try DeliveryQueries.heartbeat(worker, window: lease, of: .reload, connection),
                try DeliveryQueries.renew(worker, lease: lease, of: .reload, connection)
            )
        }
    }

    /// Claims up to `count` free reload shards for `worker`. What a worker that stopped had on its
    /// way there is found where it was: its slots' due reloads, its fan-outs' cursors.
    public func claimReloadShards(_ count: Int, for worker: String, lease: Duration) async throws -> Set<Int> {
        try await withConnection { try DeliveryQueries.claim(count, for: worker, lease: lease, of: .reload, $0) }
    }

    /// Gives reload shards up.
    public func releaseReloadShards(_ shards: Set<Int>, by worker: String) async throws {
        guard !shards.isEmpty else { return }
        try await withConnection { try ReloadWorkQueries.release(shards, by: worker, $0) }
    }

    /// Forgets `worker`'s heartbeat: it stopped, and the fair share counts the others only.
    public func leaveReloads(_ worker: String) async throws {
        try await withConnection { try DeliveryQueries.leave(worker, of: .reload, $0) }
    }

    /// The reloads to send now from `shards`: those due, then the fan-outs' next devices (read
    /// from `reading`'s positions where the worker has them), at most `limit` in all; each
    /// device's pacing, behind the reloads `onTheirWay`, decides whether it is sent or coalesced.
    public func takeReloads(
        in shards: Set<Int>,
        pausing paused: Set<AppID>,
        limit: Int,
        now: Timestamp,
        onTheirWay: [ReloadTokenSlot: ReloadOnItsWay] = [:],
        reading: [ReloadFanout: ReloadFanout.Position] = [:]
    ) async throws -> ReloadWork {
        guard !shards.isEmpty, limit > 0 else {
            return ReloadWork(due: [], pages: [], nextDue: nil, moreWaiting: false)
        }
        return try await withConnection {
            try ReloadWorkQueries.take(
                in: shards,
                paused: paused,
                limit: limit,
                now: now,
                onTheirWay: onTheirWay,
                reading: reading,
                $0
            )
        }
    }

    /// Records what became of reloads, how far their fan-outs are done, and the suspensions
    /// their answers called for.
    public func recordReloads(
        _ outcomes: [ReloadOutcome],
        cursors: [ReloadFanout: ReloadFanout.Position] = [:],
        suspensions: [Suspension] = []
    ) async throws {
        guard !outcomes.isEmpty || !cursors.isEmpty || !suspensions.isEmpty else { return }
        try await withConnection {
            try ReloadWorkQueries.record(outcomes, cursors: cursors, suspensions: suspensions, $0)
        }
    }
}

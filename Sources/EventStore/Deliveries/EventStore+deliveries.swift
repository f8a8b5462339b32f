public import ActivityLifecycle
import CanonicalJSON

/// What delivery reads and writes besides the log: its outcomes, dead tokens, suspensions and
/// held pushes, and the shards of the log that its workers hold under leases.
extension EventStore {
    /// The activity's deliveries (attempts and decisions), newest first, at most `limit`.
    public func deliveries(of stream: StreamID, limit: Int = 100) async throws -> [DeliveryRecord] {
        try await withConnection { try DeliveryQueries.deliveries(of: stream, limit: limit, $0) }
    }

    /// What the app's device was sent, newest first, at most `limit`: its activities' pushes
    /// (and the decisions about them) and its widget and control reloads.
    public func pushes(to device: DeviceID, of app: AppID, limit: Int = 100) async throws -> [DevicePush] {
        try await withConnection { try DevicePushQueries.pushes(to: device, of: app, limit: limit, $0) }
    }

    /// The deliveries of these events that the live table holds, newest first, at most `limit`:
    /// for a stream read from the log or from an archive (the deliveries' partitions are retired
    /// on their own time).
    public func deliveries(of delivered: DeliveredStream, limit: Int) async throws -> [DeliveryRecord] {
        try await withConnection { try DeliveryQueries.deliveries(of: delivered, limit: limit, $0) }
    }

    /// APNs' verdicts on the tokens that the activity's `events` (read from the log or an
    /// archive) brought, as the live tables hold them.
    public func tokenDeaths(of stream: StreamID, events: [ActivityEvent]) async throws -> [TokenDeath] {
        var remoteStart: (slot: PushToStartSlot, token: String, requestedAt: Timestamp)? = nil
        if case .requested(let requested) = events.first?.payload, let token = requested.remoteStart?.pushToStartToken,
            let device = requested.deviceID, let requestedAt = events.first?.occurredAt
        {
            let slot = PushToStartSlot(app: stream.app, device: device, activityType: requested.activityType)
            remoteStart = (slot, token, requestedAt)
        }
        return try await withConnection { [remoteStart] in
            try TokenDeathQueries.deaths(of: stream, remoteStart: remoteStart, $0)
        }
    }

    /// Records what a delivery worker decided, and moves the cursors of the shards `worker`
    /// still holds, in one transaction: a cursor never passes an outcome (or a hold) that is not
    /// recorded.
    public func recordDeliveries(_ writes: DeliveryWrites, cursors: [Int: Int64], worker: String) async throws {
        try await withConnection { try DeliveryQueries.record(writes, cursors: cursors, worker: worker, $0) }
    }

    /// Each stream's events after a version and up to a position, and the tokens APNs declared
    /// dead for those streams: what a worker loads to fold activities it reads in the middle of.
    public func deliveryHistories(_ requests: [StreamID: HistoryRequest]) async throws -> StreamHistories {
        try await withConnection { try DeliveryQueries.histories(requests, $0) }
    }

    /// What delivering the app's pushes needs; `nil` for an app that does not exist.
    public func appDelivery(of app: AppID) async throws -> AppDeliverySettings? {
        try await withConnection { try DeliveryQueries.appDelivery(of: app, $0) }
    }
}

/// The shards of the log, held by delivery workers under leases, and the workers' heartbeats.
extension EventStore {
    /// Says `worker` is alive, and renews its leases: how many workers are alive (a heartbeat in
    /// the last `lease`), and the shards it still holds.
    public func renewDeliveryLeases(of worker: String, lease: Duration) async throws -> (living: Int, held: Set<Int>) {
        try await withConnection { connection in
            (
                try DeliveryQueries.heartbeat(worker, window: lease, connection),
                try DeliveryQueries.renew(worker, lease: lease, connection)
            )
        }
    }

    /// Claims up to `count` free shards for `worker` (never held, released, or whose lease ran
    /// out), each with its cursor; with the positions after the lowest of them whose delivery is
    /// already settled (and among them the starts that were under way when their worker
    /// stopped), and the pushes held in them. `nil` when none was free.
    public func claimDeliveryShards(
        _ count: Int,
        for worker: String,
        lease: Duration
    ) async throws -> ClaimedShards? {
        try await withConnection { connection in
            let cursors = try DeliveryQueries.claim(count, for: worker, lease: lease, connection)
            guard let lowest = cursors.values.min() else { return nil }
            let shards = Set(cursors.keys)
            let (settled, interrupted) = try DeliveryQueries.settledPositions(after: lowest, in: shards, connection)
            return ClaimedShards(
                cursors: cursors,
                settled: settled,
                interrupted: interrupted,
                holds: try DeliveryQueries.holds(in: shards, connection)
            )
        }
    }

    /// Gives shards up at their final cursors (of those `worker` holds).
    public func releaseDeliveryShards(_ cursors: [Int: Int64], by worker: String) async throws {
        try await withConnection { try DeliveryQueries.moveCursors(cursors, of: worker, releasing: true, $0) }
    }

    /// Forgets `worker`'s heartbeat: it stopped, and the fair share counts the others only.
    public func leaveDelivery(_ worker: String) async throws {
        try await withConnection { try DeliveryQueries.leave(worker, $0) }
    }
}

/// Shards a worker took over: their cursors, the positions after them already settled (and
/// those of starts that were under way when their worker stopped), and the pushes held in them.
public struct ClaimedShards: Sendable {
    public let cursors: [Int: Int64]
    public let settled: Set<Int64>
    public let interrupted: Set<Int64>
    public let holds: [Hold]
}

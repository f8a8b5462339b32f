import ActivityLifecycle
import CanonicalJSON
import EventStore

/// What the worker asks its book, and what the book asks itself before it decides: questions
/// that change nothing.
extension DeliveryBook {
    /// Where to read the log from: the least-read shard being delivered.
    var readPosition: Int64? { shards.readPosition }

    /// Draining shards with nothing on the wire, with the cursors to give them up at.
    var drained: [Int: Int64] {
        guard shards.anyDraining else { return [:] }
        let busy = Set(lanes.filter { $0.value.onTheWire != nil }.map { DeliveryShard.of($0.key) })
        return cursors.filter { shards.isDraining($0.key) && !busy.contains($0.key) }
    }

    /// Each shard's cursor: just before its earliest unsettled push (or the earliest push an
    /// unreadable stream owes), or as far as it was read.
    var cursors: [Int: Int64] {
        var cursors = shards.readPositions
        func holdBack(_ shard: Int, at earliest: Int64?) {
            guard let earliest else { return }
            cursors[shard] = min(cursors[shard] ?? earliest - 1, earliest - 1)
        }
        for (shard, earliest) in lanes.floors { holdBack(shard, at: earliest) }
        for (stream, unreadable) in unreadable { holdBack(DeliveryShard.of(stream), at: unreadable.owed.min()) }
        return cursors
    }

    /// Apps of `events` not known yet.
    func unknownApps(in events: [StoredEvent]) -> Set<AppID> {
        Set(events.filter { shards.holds($0.stream) }.map(\.stream.app)).subtracting(apps.keys)
    }

    /// Apps to read again: those with pushes waiting or held whose reading is older than `age`,
    /// and suspended apps with pushes waiting (read again before each push is refused, so that
    /// new credentials resume at once).
    func staleApps(at now: Timestamp, olderThan age: Duration) -> Set<AppID> {
        Set(waiting.apps.keys).union(held.keys.map(\.app)).filter { app in
            guard let known = apps[app] else { return true }
            return (known.suspended && waiting.apps[app] != nil) || now - known.readAt >= age
        }
    }

    /// Why `push` must not be sent now, if it must not.
    func refusal(
        of push: ActivityLane.Push,
        of stream: StreamID,
        app: AppDelivery,
        at now: Timestamp
    ) -> (DeliveryRecord.Outcome, String?)? {
        if app.credentials == nil { return (.noCredentials, nil) }
        if app.suspended { return (.appSuspended, "APNs refused the app's credentials; set new ones to resume") }
        if now >= push.request.expiration { return (.expired, nil) }
        if let deviceToken = push.request.deviceToken, let since = invalidTokens[stream]?[deviceToken] {
            let state = states[stream]
            let registered =
                state?.activity.pushToken.flatMap(PushRenderer.normalized) == deviceToken
                ? state?.tokenRegisteredAt : nil
            if registered.map({ $0 <= since }) ?? true {
                return (.tokenInvalidated, "APNs declared the token dead at \(since)")
            }
        }
        return nil
    }

    /// How much is waiting to be recorded: outcomes, and one more when the log was read further
    /// since the last time (the cursors may move). Asked on every turn of the loop, so without
    /// computing the cursors: a push that settles is an outcome to record, and the cursors it
    /// lets move are computed when that is recorded.
    var unrecorded: Int {
        pending.records.count + pending.invalidations.count + pending.suspensions.count + pending.holds.count
            + (shards.readPositions == recordedReadPositions ? 0 : 1)
    }

}

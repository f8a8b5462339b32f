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
        let busy = Set(lanes.filter { $0.value.onTheWire != nil }.keys.map(DeliveryShard.of))
        return cursors.filter { shards.isDraining($0.key) && !busy.contains($0.key) }
    }

    /// Each shard's cursor: just before its earliest unsettled push, or as far as it was read.
    var cursors: [Int: Int64] {
        var cursors = shards.readPositions
        for (stream, lane) in lanes {
            guard let earliest = lane.earliestPosition else { continue }
            let shard = DeliveryShard.of(stream)
            cursors[shard] = min(cursors[shard] ?? earliest - 1, earliest - 1)
        }
        return cursors
    }

    /// Streams whose earlier events must be loaded before `events` can be folded.
    func missingPrefixes(in events: [StoredEvent]) -> [StreamID: Int] {
        var missing: [StreamID: Int] = [:]
        var seen: Set<StreamID> = []
        for stored in events where isMine(stored) && seen.insert(stored.stream).inserted {
            if states[stored.stream] == nil && stored.event.version > 1 {
                missing[stored.stream] = stored.event.version
            }
        }
        return missing
    }

    /// Apps of `events` not known yet.
    func unknownApps(in events: [StoredEvent]) -> Set<AppID> {
        Set(events.filter(isMine).map(\.stream.app)).subtracting(apps.keys)
    }

    /// Apps with pushes waiting whose reading is older than `age`, and suspended apps with pushes
    /// waiting (read again before each push is refused, so that new credentials resume at once).
    func staleApps(at now: Timestamp, olderThan age: Duration) -> Set<AppID> {
        Set(waiting.map(\.app)).filter { app in apps[app].map { $0.suspended || now - $0.readAt >= age } ?? true }
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

    /// When the earliest retry comes due, if one waits.
    var nextRetry: Timestamp? {
        waiting.compactMap { lanes[$0]?.waiting?.notBefore }.min()
    }

    /// How much is waiting to be recorded: outcomes, and cursors that moved.
    var unrecorded: Int {
        pending.records.count + pending.invalidations.count + pending.suspensions.count
            + cursors.filter { recordedCursors[$0.key] != $0.value }.count
    }

    func isMine(_ stored: StoredEvent) -> Bool {
        shards.holds(stored.stream)
    }
}

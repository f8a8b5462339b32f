import CanonicalJSON
import EventStore

/// The pushes of one activity on their way: at most one on the wire (so they reach APNs in
/// order), and at most one waiting — the newest, because content is state, not a delta: a newer
/// push replaces an older one not yet sent (latest wins). A start is the exception: nothing
/// replaces it (without it the device has no activity to update), so the newest push after it
/// waits behind it.
struct ActivityLane {
    struct Push: Hashable {
        let position: Int64
        let version: Int
        let request: APNsRequest
        /// The event that registered the token it goes to, when that is the activity's own.
        var tokenPosition: Int64? = nil
        /// When its event was committed (for the commit-to-answer latency).
        let committedAt: Timestamp
        /// Attempts made so far.
        var attempts = 0
        /// Not before then (a retry's backoff).
        var notBefore: Timestamp
        /// Held while its app was suspended, and offered again: its hold, not the shard's
        /// cursor, keeps it until it is settled.
        var resumesHold = false
        /// The widget reload its event asked for, requested once the push is settled.
        var reload: ActivityReload? = nil
        /// Which trace its spans go to.
        var trace: PushTrace = .none
    }

    private(set) var onTheWire: Push?
    private(set) var waiting: Push?
    /// The newest push after a start that waits (or is retried): it goes once the start is
    /// settled.
    private(set) var afterStart: Push?

    /// A newer push: it waits, and the push it replaces (if any) is returned, superseded.
    mutating func offer(_ push: Push) -> Push? {
        if waiting?.request.startsActivity == true {
            defer { afterStart = push }
            return afterStart
        }
        defer { waiting = push }
        return waiting
    }

    /// An older push than any in the lane (one held while its app was suspended), offered
    /// again: a start goes before what waits; another push waits only if nothing newer does,
    /// else it is returned, superseded.
    mutating func offerOlder(_ push: Push) -> Push? {
        if push.request.startsActivity {
            afterStart = waiting
            waiting = push
            return nil
        }
        if waiting?.request.startsActivity == true {
            guard afterStart == nil else { return push }
            afterStart = push
            return nil
        }
        guard waiting == nil, onTheWire == nil else { return push }
        waiting = push
        return nil
    }

    /// The waiting push, now on the wire, if nothing else is and its backoff is over.
    mutating func next(at now: Timestamp) -> Push? {
        guard onTheWire == nil, let push = waiting, push.notBefore <= now else { return nil }
        waiting = afterStart
        afterStart = nil
        onTheWire = push
        return push
    }

    /// The push on the wire is settled (answered, or not sent after all).
    mutating func settle() {
        onTheWire = nil
    }

    /// The push on the wire goes again at `time` — unless a newer one waits, which supersedes
    /// it; then it is returned. A start is never superseded: what waits goes after it.
    mutating func retry(at time: Timestamp) -> Push? {
        guard var push = onTheWire else { return nil }
        onTheWire = nil
        push.attempts += 1
        push.notBefore = time
        if push.request.startsActivity {
            afterStart = waiting
            waiting = push
            return nil
        }
        guard waiting == nil else { return push }
        waiting = push
        return nil
    }

    var isIdle: Bool { onTheWire == nil && waiting == nil }

    /// The earliest position not yet settled in this lane, but for held pushes offered again.
    var earliestPosition: Int64? {
        // Without an array in between: the worker asks this of every lane each time it records.
        var earliest: Int64? = nil
        for push in [onTheWire, waiting, afterStart] {
            guard let push, !push.resumesHold else { continue }
            earliest = min(earliest ?? push.position, push.position)
        }
        return earliest
    }
}

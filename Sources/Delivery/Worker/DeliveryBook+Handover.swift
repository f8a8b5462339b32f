import ActivityLifecycle
import CanonicalJSON
import EventStore

extension DeliveryBook {
    /// One push to send now, with what sending it needs.
    struct Send: Sendable {
        let stream: StreamID
        let position: Int64
        let version: Int
        let request: APNsRequest
        let tokenPosition: Int64?
        let committedAt: Timestamp
        let credentials: APNsCredentials
        /// 1 for the first attempt.
        let attempt: Int
        /// The widget reload its event asked for, requested once the push is settled.
        let reload: ActivityReload?
        /// Held while its app was suspended, and offered again.
        let resumed: Bool
        /// Which trace its spans go to.
        let trace: PushTrace

        init(_ push: ActivityLane.Push, of stream: StreamID, credentials: APNsCredentials) {
            self.stream = stream
            position = push.position
            version = push.version
            request = push.request
            tokenPosition = push.tokenPosition
            committedAt = push.committedAt
            self.credentials = credentials
            attempt = push.attempts + 1
            reload = push.reload
            resumed = push.resumesHold
            trace = push.trace
        }
    }

    /// What the worker writes in one transaction.
    struct Pending: Sendable {
        var records: [DeliveryRecord] = []
        var invalidations: [TokenInvalidation] = []
        var suspensions: [Suspension] = []
        /// In the order they were decided: the last change of a row is the one that holds.
        var holds: [HoldChange] = []
        /// Widget reloads asked by events whose delivery is settled.
        var reloads: [ActivityReload] = []
        /// Remote starts APNs accepted, whose devices are to confirm them.
        var acceptedStarts: [AcceptedStart] = []

        var isEmpty: Bool {
            records.isEmpty && invalidations.isEmpty && suspensions.isEmpty && holds.isEmpty && reloads.isEmpty
                && acceptedStarts.isEmpty
        }

        /// These outcomes, then `later`'s.
        func followed(by later: Pending) -> Pending {
            Pending(
                records: records + later.records,
                invalidations: invalidations + later.invalidations,
                suspensions: suspensions + later.suspensions,
                holds: holds + later.holds,
                reloads: reloads + later.reloads,
                acceptedStarts: acceptedStarts + later.acceptedStarts
            )
        }

        /// What the store writes: the outcomes, and of the holds each row's last change.
        var writes: DeliveryWrites {
            var last: [HoldKey: HoldChange] = [:]
            for change in holds { last[change.key] = change }
            var held: [Hold] = []
            var released: [HoldKey] = []
            for (key, change) in last {
                if case .held(let hold) = change { held.append(hold) } else { released.append(key) }
            }
            return DeliveryWrites(
                records: records,
                invalidations: invalidations,
                suspensions: suspensions,
                held: held,
                released: released,
                reloads: reloads,
                acceptedStarts: acceptedStarts
            )
        }
    }

    /// A change of the shards a worker holds, as its leases decided it: queued by the lease
    /// keeper and applied by the delivery cycle between two reads of the log, so that a page is
    /// never absorbed by shards it was not read for.
    enum ShardChange: Sendable {
        /// Shards taken over at their cursors, with the positions after them already settled
        /// (and those of starts that were under way when their worker stopped), and the pushes
        /// held for suspended apps.
        case adopt(cursors: [Int: Int64], settled: Set<Int64>, interrupted: Set<Int64>, holds: [Hold])
        /// Shards whose lease ran out.
        case drop(Set<Int>)
        /// Shards over the worker's fair share, to give up once nothing of them is on the wire.
        case drain(Set<Int>)
    }

    mutating func queue(_ change: ShardChange) {
        shardChanges.append(change)
    }

    /// Applies the queued shard changes.
    mutating func applyShardChanges() {
        let changes = shardChanges
        shardChanges = []
        for change in changes {
            switch change {
            case .adopt(let cursors, let settled, let interrupted, let holds):
                adopt(cursors, settled: settled, interrupted: interrupted, holds: holds)
            case .drop(let shards): drop(shards)
            case .drain(let shards): drain(shards)
            }
        }
    }
}

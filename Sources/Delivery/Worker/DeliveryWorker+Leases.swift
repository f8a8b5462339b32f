import EventStore
import Logging
import NIOConcurrencyHelpers

/// Shards of the log are held under leases, so that two workers never deliver the same activity.
extension DeliveryWorker {
    /// Keeps a fair share of the shards: renews the leases held, drains the shards over the
    /// share, claims free ones under it.
    func maintainLeases(_ book: NIOLockedValueBox<DeliveryBook>) async {
        let worker = workerID
        let lease = configuration.lease
        while !Task.isCancelled {
            do {
                let (living, held) = try await store.withConnection { connection in
                    (
                        try DeliveryQueries.heartbeat(worker, window: lease, connection),
                        try DeliveryQueries.renew(worker, lease: lease, connection)
                    )
                }
                let known = book.withLockedValue { $0.heldShards }
                let lost = known.subtracting(held)
                if !lost.isEmpty {
                    logger.warning("delivery leases ran out", metadata: ["shards": "\(lost.sorted())"])
                    book.withLockedValue { $0.drop(lost) }
                }
                let share = (DeliveryShard.count + max(living, 1) - 1) / max(living, 1)
                if held.count > share {
                    book.withLockedValue { $0.drain(Set(held.sorted().suffix(held.count - share))) }
                } else if held.count < share {
                    let claimed = try await store.withConnection { connection in
                        let claimed = try DeliveryQueries.claim(
                            share - held.count,
                            for: worker,
                            lease: lease,
                            connection
                        )
                        let settled = try claimed.values.min().map {
                            try DeliveryQueries.settledPositions(after: $0, in: Set(claimed.keys), connection)
                        }
                        return (claimed, settled ?? [])
                    }
                    if !claimed.0.isEmpty {
                        logger.debug("took delivery shards", metadata: ["shards": "\(claimed.0.keys.sorted())"])
                        book.withLockedValue { $0.adopt(claimed.0, settled: claimed.1) }
                    }
                }
            } catch is CancellationError {
                return
            } catch {
                logger.error("renewing delivery leases failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await Task.sleep(for: configuration.leaseRenewal)
        }
    }

    /// Records what was settled, gives every shard up and says this worker is gone, so that
    /// the others take its shards over at once (not when its heartbeat runs out).
    func leave(_ book: NIOLockedValueBox<DeliveryBook>) async {
        book.withLockedValue { $0.drain($0.heldShards) }
        try? await record(book)
        let worker = workerID
        try? await store.withConnection { try DeliveryQueries.leave(worker, $0) }
    }
}

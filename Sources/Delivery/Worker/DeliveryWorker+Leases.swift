import EventStore
import Logging
import NIOConcurrencyHelpers

/// Shards of the log are held under leases, so that two workers never deliver the same activity.
extension DeliveryWorker {
    /// Keeps a fair share of the shards: renews the leases held, drains the shards over the
    /// share, claims free ones under it. What it decides is queued for the delivery cycle, which
    /// applies it between two reads of the log.
    func maintainLeases(_ book: NIOLockedValueBox<DeliveryBook>, wakeup: Wakeup) async {
        let worker = workerID
        let lease = configuration.lease
        while !Task.isCancelled {
            do {
                let (living, held) = try await store.renewDeliveryLeases(of: worker, lease: lease)
                let known = book.withLockedValue { $0.heldShards }
                let lost = known.subtracting(held)
                if !lost.isEmpty {
                    logger.warning("delivery leases ran out", metadata: ["shards": "\(lost.sorted())"])
                    book.withLockedValue { $0.queue(.drop(lost)) }
                }
                let share = WorkerPolicy.share(among: living)
                if held.count > share {
                    book.withLockedValue { $0.queue(.drain(Set(held.sorted().suffix(held.count - share)))) }
                } else if held.count < share {
                    if let claimed = try await store.claimDeliveryShards(share - held.count, for: worker, lease: lease)
                    {
                        logger.debug("took delivery shards", metadata: ["shards": "\(claimed.cursors.keys.sorted())"])
                        book.withLockedValue {
                            $0.queue(
                                .adopt(
                                    cursors: claimed.cursors,
                                    settled: claimed.settled,
                                    interrupted: claimed.interrupted,
                                    holds: claimed.holds
                                )
                            )
                        }
                    }
                }
                wakeup.signal()
            } catch {
                // Cancelled: the process stops (the pool may be shut down already); nothing to say.
                if Task.isCancelled { return }
                logger.retrying("renewing delivery leases failed", after: error)
            }
            try? await Task.sleep(for: configuration.leaseRenewal)
        }
    }

    /// Records what was settled, gives every shard up and says this worker is gone, so that
    /// the others take its shards over at once (not when its heartbeat runs out).
    func leave(_ cycle: DeliveryCycle<DatabaseLedger>) async {
        cycle.book.withLockedValue { book in
            book.applyShardChanges()
            book.drain(book.heldShards)
        }
        _ = try? await cycle.record()
        let worker = workerID
        try? await store.leaveDelivery(worker)
    }
}

import ActivityLifecycle
import EventStore
import NIOConcurrencyHelpers
import TestSupport
import Testing

/// Several statements lock several rows of `delivery_shards`: a worker's renewal (every shard it
/// holds), the cycle's cursor advance (the shards it read), a release (the shards it gives up).
/// Two of them that lock the same rows in different orders can wait for each other, and
/// PostgreSQL ends one with `deadlock detected` (40P01): a renewal that keeps failing lets its
/// leases lapse. They run side by side within a process (the lease loop beside the delivery
/// cycle) and across processes (a handover).
@Suite("delivery's shards are locked in one order")
struct ShardLockOrderTests {
    /// What one process runs at once: the renewals of its leases, the advances of its cursors,
    /// and now and then a handover of some of its shards (released, then claimed back by
    /// whichever process asks first).
    private struct Process: Sendable {
        let worker: String
        let store: EventStore
        let held = NIOLockedValueBox<Set<Int>>([])

        func claim(_ count: Int) async throws {
            let claimed = try await store.claimDeliveryShards(count, for: worker, lease: .seconds(60))
            held.withLockedValue { $0.formUnion(claimed.map { Set($0.cursors.keys) } ?? []) }
        }

        func renew() async throws {
            let renewed = try await store.renewDeliveryLeases(of: worker, lease: .seconds(60)).held
            held.withLockedValue { $0 = renewed }
        }

        func advance(to position: Int64) async throws {
            let cursors = Dictionary(
                uniqueKeysWithValues: held.withLockedValue { $0 }.shuffled().map { ($0, position) }
            )
            let nothing = DeliveryWrites()
            try await store.recordDeliveries(nothing, cursors: cursors, worker: worker)
        }

        func handOver() async throws {
            let given = held.withLockedValue { $0 }.shuffled().prefix(3)
            try await store.releaseDeliveryShards(Dictionary(uniqueKeysWithValues: given.map { ($0, 0) }), by: worker)
            held.withLockedValue { $0.subtract(given) }
            try await claim(given.count)
        }
    }

    @Test("renewals, cursor advances and handovers of two processes never deadlock")
    func renewalsAndAdvancesNeverDeadlock() async throws {
        let database = try await TestDatabase.makeMigrated()
        let deadlocks = NIOLockedValueBox(0)
        // Each statement's deadlock counted; any other failure fails the test.
        func counting(_ body: () async throws -> Void) async throws {
            do {
                try await body()
            } catch EventStoreError.databaseFailure(let failure) where failure.summary.contains("40P01") {
                deadlocks.withLockedValue { $0 += 1 }
            }
        }
        try await TestDatabase.withPool(database) { first in
            try await TestDatabase.withPool(database) { second in
                let processes = [
                    Process(worker: "first", store: EventStore(pool: first, lifecycle: Lifecycle())),
                    Process(worker: "second", store: EventStore(pool: second, lifecycle: Lifecycle())),
                ]
                for process in processes { try await process.claim(DeliveryShard.count / 2) }
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for process in processes {
                        group.addTask {
                            for _ in 0..<3_000 { try await counting { try await process.renew() } }
                        }
                        group.addTask {
                            for position in 1...3_000 {
                                try await counting { try await process.advance(to: Int64(position)) }
                                if position % 50 == 0 { try await counting { try await process.handOver() } }
                            }
                        }
                    }
                    try await group.waitForAll()
                }
            }
        }
        #expect(deadlocks.withLockedValue { $0 } == 0)
    }
}

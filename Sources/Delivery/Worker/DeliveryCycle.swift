import ActivityLifecycle
import CanonicalJSON
import EventStore
import NIOConcurrencyHelpers

/// What a delivery worker reads and writes besides APNs: the log, the apps, the outcomes and the
/// shards' cursors. The worker's is PostgreSQL (`DatabaseLedger`); the model that checks the
/// worker keeps one in memory, which crashes and restarts leave as they find it.
protocol DeliveryLedger: Sendable {
    /// The next events of the log after `position`, in order.
    func events(after position: Int64, limit: Int) async throws -> [StoredEvent]
    /// The events and dead tokens of streams the book asks for.
    func histories(_ requests: [StreamID: HistoryRequest]) async throws -> StreamHistories
    /// What delivering the app's pushes needs (`nil` for an app that does not exist).
    func app(_ app: AppID, at now: Timestamp) async throws -> AppDelivery?
    /// Writes outcomes, invalidations, suspensions, holds and cursors in one transaction.
    func record(_ pending: DeliveryBook.Pending, cursors: [Int: Int64]) async throws
    /// Gives shards up at their cursors.
    func release(_ cursors: [Int: Int64]) async throws
}

/// The steps of a delivery worker between the book, which decides, and a ledger, which it reads
/// and writes: the worker runs them against PostgreSQL, the model against memory, so the model
/// checks the worker's own way of reading, loading and recording, not a copy of it. Sending is
/// the caller's (the worker's child tasks, the model's simulated APNs).
struct DeliveryCycle<Ledger: DeliveryLedger>: Sendable {
    let book: NIOLockedValueBox<DeliveryBook>
    let ledger: Ledger
    /// Events read from the log at once.
    let batchSize: Int
    /// How long an app's reading is trusted.
    let appRefresh: Duration
    let clock: @Sendable () -> Timestamp

    /// Applies the shard changes the leases decided, then reads the next page of the held shards
    /// with what folding it needs; `true` when the log was read to its end.
    func read() async throws -> Bool {
        let position = book.withLockedValue { book in
            book.applyShardChanges()
            return book.readPosition
        }
        guard let position else {
            book.withLockedValue { $0.mustRead = false }
            return true
        }
        let events = try await ledger.events(after: position, limit: batchSize)
        let (histories, unknownApps) = book.withLockedValue {
            ($0.histories(for: events), $0.unknownApps(in: events))
        }
        try await load(histories)
        try await learn(unknownApps)
        let caughtUp = events.count < batchSize
        book.withLockedValue { book in
            // The shards are those the page was read for: their changes wait for the next read.
            book.absorb(events, at: clock())
            // A full page leaves more to read: at once, not at the next announcement or second
            // (events appended by a writer that announces nothing would drain a page a second).
            book.mustRead = !caughtUp
            if caughtUp { book.shards.caughtUp() }
        }
        return caughtUp
    }

    /// Reads the apps whose readings are out of date, then loads the streams to fold again
    /// (held pushes of resumed apps, unreadable streams due for a retry).
    func prepare() async throws {
        try await learn(book.withLockedValue { $0.staleApps(at: clock(), olderThan: appRefresh) })
        try await load(book.withLockedValue { $0.reloads(at: clock()) })
    }

    /// The pushes that may go now, at most `limit`.
    func takeReady(limit: Int) -> [DeliveryBook.Send] {
        book.withLockedValue { $0.takeReady(at: clock(), limit: limit) }
    }

    /// Records the outcomes settled so far with the cursors they allow, and gives up the shards
    /// that finished draining; returns what was recorded.
    func record() async throws -> [DeliveryRecord] {
        let (pending, cursors, drained) = book.withLockedValue { book in
            let (pending, cursors) = book.takePending()
            return (pending, cursors, book.drained)
        }
        if !pending.isEmpty || !cursors.isEmpty {
            do {
                try await ledger.record(pending, cursors: cursors)
                book.withLockedValue { $0.recorded(pending) }
            } catch {
                // Nothing was written: keep the outcomes for the next try (the cursors are
                // computed again then).
                book.withLockedValue { $0.putBack(pending) }
                throw error
            }
        }
        if !drained.isEmpty {
            try await ledger.release(drained)
            book.withLockedValue { $0.drop(Set(drained.keys)) }
        }
        return pending.records
    }

    private func load(_ requests: [StreamID: HistoryRequest]) async throws {
        guard !requests.isEmpty else { return }
        let loaded = try await ledger.histories(requests)
        book.withLockedValue { $0.install(loaded, for: requests, at: clock()) }
    }

    private func learn(_ apps: Set<AppID>) async throws {
        for app in apps {
            guard let delivery = try await ledger.app(app, at: clock()) else { continue }
            book.withLockedValue { $0.learn(app, delivery) }
        }
    }
}

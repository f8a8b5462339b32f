import ActivityLifecycle
public import CanonicalJSON
import Postgres

extension EventStore {
    /// Applies the time-driven transitions due by `now` (scheduled starts, stale dates,
    /// lifetimes, dismissals) of up to `limit` activities, in one transaction.
    ///
    /// Activities are claimed with `FOR UPDATE SKIP LOCKED`, so several workers — in one process
    /// or several — share the work and never apply a deadline twice. Each activity's due
    /// transitions go through the state machine in due-time order, each recorded with its due
    /// time as `occurred_at`, however late they are applied.
    ///
    /// - Returns: the events appended, activity by activity.
    @discardableResult
    public func applyDueDeadlines(at now: Timestamp, limit: Int) async throws -> [StoredEvent] {
        let lifecycle = lifecycle
        let appended = try await withTransaction { connection in
            let appends = try DeadlineQueries.claimDue(at: now, limit: limit, connection).compactMap { stored in
                let (after, events) = lifecycle.applyDueDeadlines(to: stored.activity, at: now)
                return events.isEmpty
                    ? nil
                    : ActivityAppend(
                        events,
                        on: stored.stream,
                        from: stored.activity,
                        to: after,
                        lifecycle,
                        idempotency: nil
                    )
            }
            return try Self.appendTimeDriven(appends, connection)
        }
        announce(appended)
        return appended
    }

    /// Appends what the system decided when something came due, as one batch: the cap rows the
    /// closings free are locked in the order every batch of commands locks them, so that the two
    /// never wait for each other in a cycle. A time-driven transition opens nothing and is applied
    /// under the row's lock: a refusal is a fault; the transaction is undone and the worker tries
    /// again.
    static func appendTimeDriven(_ appends: [ActivityAppend], _ connection: Connection) throws -> [StoredEvent] {
        let results = try CommandQueries.append(appends, recording: [], connection)
        return try zip(appends, results).flatMap { append, result in
            switch result {
            case .success(let (first, recordedAt)): append.stored(from: first, recordedAt: recordedAt)
            case .failure(let refusal): throw refusal
            }
        }
    }

    /// Counts events appended by a committed transaction and wakes those who wait for appends.
    func announce(_ appended: [StoredEvent]) {
        StoreMetrics.recordAppended(appended)
        if !appended.isEmpty {
            notifier?.eventsAppended()
        }
    }

    /// When the earliest deadline of any activity is due, or `nil` when none is pending.
    public func earliestDeadline() async throws -> Timestamp? {
        try await withConnection { try DeadlineQueries.earliestDeadline($0) }
    }
}

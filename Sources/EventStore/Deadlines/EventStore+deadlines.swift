import ActivityLifecycle
public import CanonicalJSON

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
            var appended: [StoredEvent] = []
            for stored in try DeadlineQueries.claimDue(at: now, limit: limit, connection) {
                let before = stored.activity
                let (after, events) = lifecycle.applyDueDeadlines(to: before, at: now)
                guard !events.isEmpty else { continue }
                appended += try Self.append(
                    events,
                    on: stored.stream,
                    from: before,
                    to: after,
                    lifecycle,
                    connection
                ).1
            }
            return appended
        }
        StoreMetrics.recordAppended(appended)
        if !appended.isEmpty {
            notifier?.eventsAppended()
        }
        return appended
    }

    /// When the earliest deadline of any activity is due, or `nil` when none is pending.
    public func earliestDeadline() async throws -> Timestamp? {
        try await withConnection { try DeadlineQueries.earliestDeadline($0) }
    }
}

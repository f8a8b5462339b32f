import ActivityLifecycle
import CanonicalJSON
import Postgres

extension EventStore {
    /// The one append step, for commands and deadlines alike: appends `events`, which take the
    /// activity from `before` (`nil` for a request) to `after`, with its projection and the
    /// change to the open counts, in one `liveline_append` statement. With `idempotency`, the
    /// outcome is recorded under that key in the same statement.
    ///
    /// - Returns: the activity as projected, and the events as stored.
    /// - Throws: the `PostgresError` of `liveline_append` (a cap reached, a version conflict).
    static func append(
        _ events: [ActivityEvent],
        on stream: StreamID,
        from before: Activity?,
        to after: Activity,
        _ lifecycle: Lifecycle,
        idempotency: IdempotencyKey?,
        _ connection: Connection
    ) throws -> (StoredActivity, [StoredEvent]) {
        let version = before?.version ?? 0
        let stored = StoredActivity(stream: stream, activity: after, nextDeadline: lifecycle.nextDeadline(of: after))
        let (first, recordedAt) = try CommandQueries.append(
            stored,
            events: events,
            expectedVersion: version,
            openChange: before?.state.isOpen == true && !after.state.isOpen ? -1 : 0,
            idempotency: idempotency,
            outcome: idempotency.map { _ in RecordedOutcome.accepted(from: version, to: after.version).json },
            connection
        )
        let appended = events.enumerated().map { index, event in
            StoredEvent(position: first + Int64(index), stream: stream, event: event, recordedAt: recordedAt)
        }
        return (stored, appended)
    }
}

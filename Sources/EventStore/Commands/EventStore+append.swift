import ActivityLifecycle
import CanonicalJSON
import Postgres

/// One activity's append, for commands and deadlines alike: `events`, which take the activity
/// from `before` (`nil` for a request) to `after`, with its projection and the change to the
/// open counts, written by one append (`liveline_append`, or `liveline_append_batch` with others) in one step. With `idempotency`, the outcome is
/// recorded under that key in the same step; with `trace`, the trace context is kept with each
/// event (`event_traces`).
struct ActivityAppend {
    let stored: StoredActivity
    let events: [ActivityEvent]
    let expectedVersion: Int
    let openChange: Int
    let idempotency: IdempotencyKey?
    /// What the idempotency record says of the command.
    let outcome: JSONB?
    /// A sampled request's trace context, kept with the events.
    let trace: TraceContext?

    init(
        _ events: [ActivityEvent],
        on stream: StreamID,
        from before: Activity?,
        to after: Activity,
        _ lifecycle: Lifecycle,
        idempotency: IdempotencyKey?,
        trace: TraceContext? = nil
    ) {
        let version = before?.version ?? 0
        self.stored = StoredActivity(stream: stream, activity: after, nextDeadline: lifecycle.nextDeadline(of: after))
        self.events = events
        self.expectedVersion = version
        self.openChange = before?.state.isOpen == true && !after.state.isOpen ? -1 : 0
        self.idempotency = idempotency
        self.trace = trace
        self.outcome = idempotency.map { _ in RecordedOutcome.accepted(from: version, to: after.version).json }
    }

    /// The events as stored, from where the log put the first and when it recorded them.
    func stored(from first: Int64, recordedAt: Timestamp) -> [StoredEvent] {
        events.enumerated().map { index, event in
            StoredEvent(position: first + Int64(index), stream: stored.stream, event: event, recordedAt: recordedAt)
        }
    }
}

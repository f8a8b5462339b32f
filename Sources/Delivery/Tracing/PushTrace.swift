import ActivityLifecycle
import EventStore

/// Which trace a push's spans go to, from the event that asked for it (`PushTraces`).
enum PushTrace: Hashable, Sendable {
    /// None: its event was read without trace contexts (pushes are not traced), or a request
    /// that was not sampled appended it — the request's sampling decides for what it caused.
    case none
    /// The trace of the sampled request that appended its event.
    case request(TraceContext)
    /// A trace of its own, sampled as a new trace is: an event of a deadline or a device.
    case own

    init(of stored: StoredEvent) {
        if let context = stored.traceContext {
            self = .request(context)
        } else {
            self = stored.event.cause == .app ? .none : .own
        }
    }
}

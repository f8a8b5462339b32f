import Tracing

/// The span of a command from a sampled request, from its queueing to its batch's commit, and
/// its trace context, which the batch keeps with the command's events.
struct CommandTrace: Sendable {
    let span: any Span
    let context: TraceContext

    /// The trace of a command in `span`; `nil` when the span records nothing (tracing is off, or
    /// the request was not sampled): then nothing is kept.
    init?(_ span: any Span) {
        guard span.isRecording, let context = TraceContext(of: span.context) else { return nil }
        self.span = span
        self.context = context
    }

    /// Says how many commands the batch that answered the command ran.
    func committed(inBatchOf size: Int) {
        span.attributes["liveline.batch.size"] = size
    }
}

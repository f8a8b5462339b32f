public import ActivityLifecycle
public import CanonicalJSON
import Tracing

extension EventStore {
    /// Runs a command: loads the activity, decides, and appends the events with the projection
    /// and the open counts. Rejections are recorded and returned.
    ///
    /// Commands that arrive together run together: the store's writers take what is queued and
    /// commit it in one transaction (`CommandQueue`), and each caller gets what its command
    /// would have got alone.
    ///
    /// Traced as `commit` in the caller's trace (the batch's size, the database, the outcome).
    /// When that span is sampled, its trace context is kept with the events the command appends
    /// (`event_traces`), so that their pushes join the trace; otherwise nothing is kept.
    ///
    /// - Parameters:
    ///   - expectedVersion: when given, the command applies only to that version of the activity
    ///     (0: it must not exist yet); otherwise to the version it finds. Without it, a command
    ///     that another appended before is decided again on the new version (up to
    ///     `CommandBatch.attempts` times).
    ///   - idempotency: a key under which the outcome is recorded; a retry with the same key and
    ///     request gets the recorded outcome and appends nothing.
    /// - Throws: `EventStoreError.versionConflict` when the activity is not at `expectedVersion`
    ///   (or others kept appending first), `.idempotencyKeyReused`, `.unknownApp`, or a database
    ///   failure.
    @discardableResult
    public func execute(
        _ command: Command,
        on stream: StreamID,
        at now: Timestamp,
        expectedVersion: Int? = nil,
        idempotency: IdempotencyKey? = nil
    ) async throws -> CommandResult {
        try await withSpan("commit", ofKind: .internal) { span in
            let trace = CommandTrace(span)
            let result = try await commands.run(
                command,
                on: stream,
                at: now,
                expectedVersion: expectedVersion,
                idempotency: idempotency,
                trace: trace
            )
            if trace != nil { describe(result, of: command, on: stream, in: span) }
            return result
        }
    }

    /// What a sampled commit's span says besides the batch's size (set as the batch commits).
    private func describe(_ result: CommandResult, of command: Command, on stream: StreamID, in span: any Span) {
        span.updateAttributes { attributes in
            attributes["db.system.name"] = "postgresql"
            attributes["db.namespace"] = databaseName
            attributes["liveline.app.id"] = stream.app.rawValue
            attributes["liveline.activity.id"] = stream.activity.rawValue
            attributes["liveline.command"] = command.name
            attributes["liveline.replay"] = result.isReplay
            switch result.outcome {
            case .accepted(let stored, let events):
                attributes["liveline.outcome"] = "accepted"
                attributes["liveline.version"] = stored.activity.version
                attributes["liveline.event.position"] = events.first?.position
            case .rejected(let rejection):
                attributes["liveline.outcome"] = "rejected"
                attributes["liveline.rejection"] = rejection.code
            }
        }
    }
}

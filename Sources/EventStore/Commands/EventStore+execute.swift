public import ActivityLifecycle
public import CanonicalJSON

extension EventStore {
    /// Runs a command: loads the activity, decides, and appends the events with the projection
    /// and the open counts. Rejections are recorded and returned.
    ///
    /// Commands that arrive together run together: the store's writers take what is queued and
    /// commit it in one transaction (`CommandQueue`), and each caller gets what its command
    /// would have got alone.
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
        try await commands.run(command, on: stream, at: now, expectedVersion: expectedVersion, idempotency: idempotency)
    }
}

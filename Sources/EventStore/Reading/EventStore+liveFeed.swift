public import ActivityLifecycle

extension EventStore {
    /// Events after `position`, as `events(after:app:limit:)`, waiting up to `timeout` when there
    /// are none yet: woken through `listener` when any process appends, and looking
    /// again at least every second anyway, since the readable part of the log also grows when a
    /// transaction that held it back ends, which notifies no one.
    public func events(
        after position: Int64,
        app: AppID? = nil,
        limit: Int,
        waitingUpTo timeout: Duration,
        listener: AppendListener
    ) async throws -> [StoredEvent] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let generation = listener.generation
            let events = try await events(after: position, app: app, limit: limit)
            let remaining = deadline - ContinuousClock.now
            guard events.isEmpty, remaining > .zero, !Task.isCancelled else { return events }
            await listener.wait(after: generation, timeout: min(remaining, .seconds(1)))
        }
    }
}

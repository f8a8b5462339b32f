import EventStore

/// What the delivery and reload workers share: how long a retry waits, how many shards a worker
/// takes, and how an announcement wakes it.
enum WorkerPolicy {
    /// Exponential backoff with jitter: the `attempt`-th retry waits between half and all of
    /// `initial · 2^(attempt-1)`, capped at `maximum`.
    static func backoff(_ attempt: Int, initial: Duration, maximum: Duration) -> Duration {
        let exponential = initial * (1 << min(attempt - 1, 20))
        return min(exponential, maximum) * Double.random(in: 0.5...1.0)
    }

    /// A worker's fair share of the shards when `living` workers share them.
    static func share(among living: Int) -> Int {
        (DeliveryShard.count + max(living, 1) - 1) / max(living, 1)
    }

    /// Calls `changed` each time `wait` (a listener's wait for a channel's announcement after a
    /// generation, for up to a second) returns a newer generation than the last, from `start`,
    /// until the task is cancelled.
    static func follow(
        from start: UInt64,
        _ wait: (UInt64) async -> UInt64,
        _ changed: () -> Void
    ) async {
        var generation = start
        while !Task.isCancelled {
            let announced = await wait(generation)
            if announced != generation {
                generation = announced
                changed()
            }
        }
    }
}

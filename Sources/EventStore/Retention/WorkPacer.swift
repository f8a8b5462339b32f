import Foundation

/// Keeps a background job to a share of the time, so that beside a busy server it takes no more
/// than that share of a core from the requests: the job calls `pause()` between pieces of work,
/// and once it has worked `quantum` since its last rest, `pause()` rests long enough that the
/// work is `share` of the time worked and rested (at most `longestRest`, so that a statement that
/// only waited, such as a detach waiting for older transactions, does not park the job for long).
/// A share of 1 never rests. Wall time counts as work: it covers what PostgreSQL does for the job
/// meanwhile, and a job slowed down by a busy machine rests longer.
///
/// A change to the log's partitions runs `alone`: the job rests at least `quiet` before and after
/// it, so that the requests around the change meet the change only, never the job's heavier
/// pieces of work next to it.
///
/// `pause()` throws `CancellationError` once `isStopped` says so, so that a long job stops between
/// two pieces. Used by one thread at a time.
final class WorkPacer {
    let share: Double
    let quantum: Duration
    let longestRest: Duration
    let quiet: Duration
    private let now: () -> ContinuousClock.Instant
    private let sleep: (Duration) -> Void
    private let isStopped: () -> Bool
    private var workingSince: ContinuousClock.Instant

    init(
        share: Double,
        quantum: Duration = .milliseconds(10),
        longestRest: Duration = .seconds(1),
        quiet: Duration = .milliseconds(250),
        isStopped: @escaping () -> Bool = { false },
        now: @escaping () -> ContinuousClock.Instant = { ContinuousClock.now },
        sleep: @escaping (Duration) -> Void = WorkPacer.threadSleep
    ) {
        precondition(share > 0 && share <= 1, "a share of the time is in (0, 1]")
        self.share = share
        self.quantum = quantum
        self.longestRest = longestRest
        self.quiet = quiet
        self.isStopped = isStopped
        self.now = now
        self.sleep = sleep
        workingSince = now()
    }

    /// Rests if the job has worked a quantum since its last rest; throws once the job is stopped.
    func pause() throws {
        if isStopped() { throw CancellationError() }
        let worked = now() - workingSince
        guard share < 1, worked >= quantum else { return }
        rest(atLeast: .zero)
    }

    /// Runs `change` with a rest of at least `quiet` before and after it (or the rest the work
    /// before it is owed, if longer); throws before it once the job is stopped. A share of 1
    /// never rests.
    func alone<Result>(_ change: () throws -> Result) throws -> Result {
        if isStopped() { throw CancellationError() }
        rest(atLeast: quiet)
        let result = try change()
        rest(atLeast: quiet)
        return result
    }

    private func rest(atLeast least: Duration) {
        guard share < 1 else { return }
        let owed = (now() - workingSince) * ((1 - share) / share)
        sleep(max(least, min(owed, longestRest)))
        workingSince = now()
    }

    /// Blocks the calling thread: the job runs on a thread of its own (a pooled connection's).
    static func threadSleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        Thread.sleep(forTimeInterval: Double(seconds) + Double(attoseconds) / 1e18)
    }
}

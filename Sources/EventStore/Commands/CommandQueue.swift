import ActivityLifecycle
import CanonicalJSON
import Postgres
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The store's write path: commands queue here, and writers — each on a pooled connection, on
/// the pool's threads — take what is queued and run it as one `CommandBatch`, as a
/// `BatchSchedule` says.
///
/// - A command that finds no writer running starts one at once: a batch never waits for
///   company. Commands that arrive while a writer is busy queue, and go together in its next
///   batch — or in the one it is still deciding, which they join; another writer starts beside
///   it only when more queue than a batch takes (`BatchSchedule`).
/// - A writer that finds nothing to take stays ready for `readiness` before it stops, so that
///   callers it answered who come straight back find it there.
/// - A batch holds one command per activity (and per idempotency key): commands on one activity
///   run one after another, each on the state the previous one left, and two batches never wait
///   for each other's locks on one activity.
/// - A command that another process's command beat to the append is decided again, first in
///   the next batch, when it set no precondition.
final class CommandQueue: Sendable {
    /// The most commands in one batch: one transaction holds their locks until all of them are
    /// decided and written, so a longer batch would hold the others' stripes and activities
    /// longer; more queued start a batch on another writer (`BatchSchedule`).
    static let batchLimit = 32
    /// How long a writer that finds nothing to take stays ready before it stops, yielding its
    /// core meanwhile: a caller it answered that comes straight back (a client's next request)
    /// is taken at once, with no thread to wake.
    static let readiness = Duration.microseconds(100)

    private let pool: ConnectionPool
    private let lifecycle: Lifecycle
    private let notifier: AppendNotifier?
    private let schedule: Mutex<BatchSchedule<PendingCommand>>
    /// What the writers know of activities without loading them.
    let known = KnownActivities()

    init(pool: ConnectionPool, lifecycle: Lifecycle, notifier: AppendNotifier?, writers: Int) {
        self.pool = pool
        self.lifecycle = lifecycle
        self.notifier = notifier
        self.schedule = Mutex(BatchSchedule(writers: writers, batchLimit: Self.batchLimit))
    }

    /// How many commands wait for a writer.
    var queuedCount: Int {
        schedule.withLock { $0.queued.count }
    }

    /// Queues the command and waits for its answer.
    func run(
        _ command: Command,
        on stream: StreamID,
        at now: Timestamp,
        expectedVersion: Int?,
        idempotency: IdempotencyKey?,
        trace: CommandTrace?
    ) async throws -> CommandResult {
        try await withCheckedThrowingContinuation { continuation in
            let pending = PendingCommand(
                command: command,
                stream: stream,
                now: now,
                expectedVersion: expectedVersion,
                idempotency: idempotency,
                trace: trace,
                answer: continuation
            )
            let startsWriter = schedule.withLock { $0.enqueue(pending) }
            if startsWriter { startWriter() }
        }
    }

    /// Starts a writer: straight on a pool thread when a connection is free (no task in between:
    /// an idle store answers a command with one hop to the pool's thread and one back), else in a
    /// task that waits for a connection.
    private func startWriter() {
        guard !pool.lendNow({ self.write(on: $0) }) else { return }
        Task {
            do {
                try await pool.withConnection { self.write(on: .success($0)) }
            } catch {
                self.write(on: .failure(error))
            }
        }
    }

    /// One writer on a lent connection: runs batches while there are any for it. A batch that
    /// failed on its connection gives it back, broken or not, and the writer goes on with
    /// another; without a connection, the batch it would run fails with the reason.
    private func write(on connection: Result<Connection, any Error>) {
        switch connection {
        case .success(let connection):
            if runBatches(on: connection) { startWriter() }
        case .failure(let error):
            guard let batch = schedule.withLock({ $0.next(after: [], retrying: []) }) else { return }
            for pending in batch { pending.answer.resume(throwing: EventStoreError.sealed(error)) }
            schedule.withLock { $0.release(batch) }
            startWriter()
        }
    }

    /// Runs batches until none is left for this writer (`false`: it stopped), or one failed
    /// (`true`: it goes on with another connection). Runs on a pool thread.
    private func runBatches(on connection: Connection) -> Bool {
        var finished: [PendingCommand] = []
        var retries: [PendingCommand] = []
        while var batch = nextBatch(after: finished, retrying: retries) {
            let answers: [BatchAnswer]
            do {
                answers = try CommandBatch.run(
                    &batch,
                    joining: { count in self.schedule.withLock { $0.joining(batchOf: count) } },
                    lifecycle,
                    known,
                    connection
                )
            } catch {
                for pending in batch { pending.answer.resume(throwing: EventStoreError.sealed(error)) }
                schedule.withLock { $0.release(batch) }
                return true
            }
            StoreMetrics.recordBatch(of: batch.count)
            retries = deliver(answers, to: batch)
            finished = batch
        }
        return false
    }

    /// The writer's next batch: what may go now; when nothing may, whatever comes within
    /// `readiness`, taken as soon as it comes; `nil` when nothing came (the writer stops).
    private func nextBatch(after finished: [PendingCommand], retrying: [PendingCommand]) -> [PendingCommand]? {
        let readyUntil = ContinuousClock.now + Self.readiness
        var batch = schedule.withLock { $0.next(after: finished, retrying: retrying, mayStop: false) }
        while batch?.isEmpty == true {
            let mayStop = ContinuousClock.now >= readyUntil
            if !mayStop { sched_yield() }
            batch = schedule.withLock { $0.next(after: [], retrying: [], mayStop: mayStop) }
        }
        return batch
    }

    /// Answers the commands of a committed batch; returns those to decide again.
    private func deliver(_ answers: [BatchAnswer], to batch: [PendingCommand]) -> [PendingCommand] {
        var retries: [PendingCommand] = []
        var appended = false
        for (pending, answer) in zip(batch, answers) {
            pending.trace?.committed(inBatchOf: batch.count)
            switch answer {
            case .result(let result):
                StoreMetrics.record(result)
                if case .accepted(_, let events) = result.outcome, !events.isEmpty, !result.isReplay {
                    appended = true
                }
                pending.answer.resume(returning: result)
            case .failure(let error):
                pending.answer.resume(throwing: error)
            case .decideAgain:
                var retry = pending
                retry.decided += 1
                retries.append(retry)
            }
        }
        if appended {
            notifier?.eventsAppended()
        }
        return retries
    }
}

/// What at most one command of all running batches may hold: its activity, its idempotency key.
enum CommandKey: Hashable {
    case stream(StreamID)
    case idempotencyKey(AppID, String)
}

extension PendingCommand: Batchable {
    var batchKeys: [CommandKey] {
        [.stream(stream)] + (idempotency.map { [.idempotencyKey(stream.app, $0.key)] } ?? [])
    }
}

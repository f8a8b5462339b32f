import ActivityLifecycle
import CanonicalJSON
import Postgres
import Synchronization

/// The store's write path: commands queue here, and writers — each on a pooled connection, on
/// the pool's threads — take what is queued and run it as one `CommandBatch`, as a
/// `BatchSchedule` says.
///
/// - A command that finds a writer free starts one at once: a batch never waits for company.
///   Commands that arrive while every writer is busy queue, and go together in the next batch.
/// - A batch holds one command per activity (and per idempotency key): commands on one activity
///   run one after another, each on the state the previous one left, and two batches never wait
///   for each other's locks on one activity.
/// - A command that another process's command beat to the append is decided again, first in
///   the next batch, when it set no precondition.
final class CommandQueue: Sendable {
    /// The most commands in one batch. Each command of a batch runs in a subtransaction of its
    /// own, and PostgreSQL keeps up to 64 of those per transaction in shared memory.
    static let batchLimit = 32

    private let pool: ConnectionPool
    private let lifecycle: Lifecycle
    private let notifier: AppendNotifier?
    private let schedule: Mutex<BatchSchedule<PendingCommand>>

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
        idempotency: IdempotencyKey?
    ) async throws -> CommandResult {
        try await withCheckedThrowingContinuation { continuation in
            let pending = PendingCommand(
                command: command,
                stream: stream,
                now: now,
                expectedVersion: expectedVersion,
                idempotency: idempotency,
                answer: continuation
            )
            let startsWriter = schedule.withLock { $0.enqueue(pending) }
            if startsWriter {
                Task { await write() }
            }
        }
    }

    /// One writer: runs batches while there are any for it, on one connection after another
    /// (a batch that failed on its connection gives it back, broken or not).
    private func write() async {
        var connectionFailed = true
        while connectionFailed {
            do {
                connectionFailed = try await pool.withConnection { self.runBatches(on: $0) }
            } catch {
                // No connection: the batch this writer would run fails with the reason.
                guard let batch = schedule.withLock({ $0.next(after: [], retrying: []) }) else { return }
                for pending in batch { pending.answer.resume(throwing: EventStoreError.sealed(error)) }
                schedule.withLock { $0.release(batch) }
                connectionFailed = true
            }
        }
    }

    /// Runs batches until none is left for this writer (`false`: it stopped), or one failed
    /// (`true`: it goes on with another connection). Runs on a pool thread.
    private func runBatches(on connection: Connection) -> Bool {
        var finished: [PendingCommand] = []
        var retries: [PendingCommand] = []
        while let batch = schedule.withLock({ $0.next(after: finished, retrying: retries) }) {
            let answers: [BatchAnswer]
            do {
                answers = try CommandBatch.run(batch, lifecycle, connection)
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

    /// Answers the commands of a committed batch; returns those to decide again.
    private func deliver(_ answers: [BatchAnswer], to batch: [PendingCommand]) -> [PendingCommand] {
        var retries: [PendingCommand] = []
        var appended = false
        for (pending, answer) in zip(batch, answers) {
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

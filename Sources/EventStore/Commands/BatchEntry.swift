import ActivityLifecycle
import Postgres

/// One command of a batch as the batch goes: the command, what it was decided on, and where it
/// stands. A batch is a list of these, so that a command's decision, its append and its answer
/// travel together and never fall out of step by index.
struct BatchEntry {
    let pending: PendingCommand
    /// What this process knew of its activity and app, when it was decided on that alone.
    let known: KnownActivities.Known?
    /// What was loaded for it otherwise; remembered once the batch has committed.
    let loaded: CommandQueries.Loaded?
    var stage: Stage

    enum Stage {
        /// Answered, with nothing to write: an outcome replayed, a no-op, a failure, or to be
        /// decided again.
        case answered(BatchAnswer)
        /// Refused by a rule when it was decided: recorded with the batch.
        case rejected(Rejection)
        /// Its events, appended with the batch.
        case appending(ActivityAppend)
        /// Refused by a cap when the batch appended it: recorded once the batch has committed.
        case refusedAtAppend(Rejection)
    }

    /// How recording the rejections that caps made at the append went.
    enum Recording {
        case recorded
        /// A concurrent command with the same idempotency key committed first: decided again,
        /// and so answered as that one was.
        case keyTakenMeanwhile
        case failed(any Error)
    }

    var append: ActivityAppend? {
        if case .appending(let append) = stage { append } else { nil }
    }

    /// The rejection to record with the batch.
    var rejectionToRecord: CommandQueries.BatchRejection? {
        if case .rejected(let rejection) = stage { pending.record(rejection) } else { nil }
    }

    /// The rejection to record after the batch, of a command a cap refused at the append.
    var rejectionRefusedAtAppend: CommandQueries.BatchRejection? {
        if case .refusedAtAppend(let rejection) = stage { pending.record(rejection) } else { nil }
    }

    func answered(_ answer: BatchAnswer) -> BatchEntry {
        var entry = self
        entry.stage = .answered(answer)
        return entry
    }

    /// What a refusal of its append comes to: decided again when it was decided on what is known
    /// (which was behind: an opening's activity exists, or a cap is reached), else answered as
    /// it would be alone.
    func refused(_ refusal: AppendRefusal, of append: ActivityAppend) -> BatchEntry {
        guard known == nil else { return answered(.decideAgain) }
        switch pending.outcome(of: refusal, expectedVersion: append.expectedVersion) {
        case .answered(let answer):
            return answered(answer)
        case .rejected(let rejection):
            var entry = self
            entry.stage = .refusedAtAppend(rejection)
            return entry
        }
    }

    /// The entry once the rejections refused at the append were recorded (`recording`).
    func afterRecording(_ recording: Recording) -> BatchEntry {
        guard case .refusedAtAppend(let rejection) = stage else { return self }
        switch recording {
        case .recorded: return answered(.rejected(rejection))
        case .keyTakenMeanwhile: return answered(.decideAgain)
        case .failed(let error): return answered(.failure(error))
        }
    }

    /// Its answer once the batch is done. (The append statement answers every append it is
    /// given, or throws: an entry still appending then has no result, and says so.)
    var answer: BatchAnswer {
        switch stage {
        case .answered(let answer): answer
        case .rejected(let rejection), .refusedAtAppend(let rejection): .rejected(rejection)
        case .appending: .failure(EventStoreError.unreadableRow("the batch's append gave no result for a command"))
        }
    }
}

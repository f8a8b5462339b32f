import ActivityLifecycle
import CanonicalJSON
import Postgres

/// What became of one command of a batch.
enum BatchAnswer {
    case result(CommandResult)
    case failure(any Error)
    /// Another command on the activity committed between the batch's load and its append, and
    /// the command set no precondition: decide it again, in the next batch, on the activity as
    /// it is then.
    case decideAgain
}

/// One batch of commands, at most one per activity, run on one connection:
/// 1. one statement loads what they all need, but for commands this process can decide on what
///    it knows of their activities and apps (`KnownActivities`): a batch of those skips it;
/// 2. `decide` runs for each, in arrival order, in memory; commands that queued meanwhile join
///    the batch, and are loaded (if they must be) and decided in turn, until none came;
/// 3. one statement records the rejections and appends the events of all (one transaction);
/// then each command has its answer. A refusal of one command (a cap, a version conflict)
/// never fails the others. Only a cap reached at the append costs a third statement, to
/// record those rejections.
enum CommandBatch {
    /// How many times a command without `expectedVersion` is decided when others keep
    /// committing first.
    static let attempts = 10

    /// - Parameters:
    ///   - batch: the commands taken; those that `joining` gives while the batch is decided join
    ///     it (it is what was run when this returns or throws).
    ///   - joining: what queued meanwhile and may join a batch of so many commands.
    /// - Throws: a database failure that left nothing of the batch written (nothing of it is
    ///   acknowledged); deadlocks and serialization failures were already retried.
    static func run(
        _ batch: inout [PendingCommand],
        joining: (Int) -> [PendingCommand],
        _ lifecycle: Lifecycle,
        _ known: KnownActivities,
        _ connection: Connection
    ) throws -> [BatchAnswer] {
        // A row that another process's command created since the load fails the statement: an
        // idempotency key of a rejection or of an append written together, or an activity that a
        // lone opening created while the batch held another stripe of its app. The batch's next
        // load finds that command's outcome and replays it, or finds the activity. Rules that an
        // admin changed since they were read fail it too; it is then decided on fresh loads.
        try EventStore.retryingDeadlocks(alsoRetrying: \.isStaleDecision) {
            do {
                return try decideAndAppend(&batch, joining: joining, lifecycle, known, connection)
            } catch let error as PostgresError where error.isRulesChanged {
                known.forgetRules(of: Set(batch.map(\.stream.app)))
                throw error
            }
        }
    }

    /// What a batch decided so far, besides each command's stage: what its appends must find
    /// unchanged, and the remote starts decided so far, which count against the same device's
    /// later ones (the load saw none of them).
    private struct Decided {
        var rules = CommandQueries.RulesCheck()
        var remoteStarts: [DeviceKey: [Timestamp]] = [:]
    }

    /// Decides the batch's commands, and those that join it while it does: each round decides
    /// what queued during the one before (none waits for the next), so that a batch taken
    /// while its callers were still coming back leaves with them.
    private static func decideAndAppend(
        _ batch: inout [PendingCommand],
        joining: (Int) -> [PendingCommand],
        _ lifecycle: Lifecycle,
        _ known: KnownActivities,
        _ connection: Connection
    ) throws -> [BatchAnswer] {
        var decided = Decided()
        var entries: [BatchEntry] = []
        while entries.count < batch.count {
            entries += try decide(batch[entries.count...], into: &decided, lifecycle, known, connection)
            batch += joining(batch.count)
        }
        if entries.allSatisfy({ $0.loaded == nil }) { StoreMetrics.recordBatchWithoutLoad() }
        let appends = entries.compactMap(\.append)
        let rejections = entries.compactMap(\.rejectionToRecord)
        var written: [StoredActivity] = []
        var refusedStreams: [StreamID] = []
        if !appends.isEmpty || !rejections.isEmpty {
            var results = try CommandQueries.append(
                appends,
                recording: rejections,
                checking: decided.rules,
                connection
            ).makeIterator()
            entries = entries.map { entry in
                guard let append = entry.append, let result = results.next() else { return entry }
                switch result {
                case .success(let (first, recordedAt)):
                    written.append(append.stored)
                    return entry.answered(.accepted(append.stored, append.stored(from: first, recordedAt: recordedAt)))
                case .failure(let refusal):
                    refusedStreams.append(entry.pending.stream)
                    return entry.refused(refusal, of: append)
                }
            }
            let recorded = record(entries.compactMap(\.rejectionRefusedAtAppend), connection)
            entries = entries.map { $0.afterRecording(recorded) }
        }
        remember(entries, written: written, known)
        known.forget(refusedStreams)
        return entries.map(\.answer)
    }

    /// Decides one round of commands: those that may be decided on what is known, the others on
    /// one load. Returns their entries, in order.
    private static func decide(
        _ commands: ArraySlice<PendingCommand>,
        into decided: inout Decided,
        _ lifecycle: Lifecycle,
        _ known: KnownActivities,
        _ connection: Connection
    ) throws -> [BatchEntry] {
        let knownNow = known.known(commands.map(\.stream), opening: commands.map(\.command.isRequest))
        let knowns = zip(commands, knownNow).map { pending, known in
            pending.mayBeDecidedOnWhatIsKnown ? known : nil
        }
        let loadKeys = zip(commands, knowns).filter { $0.1 == nil }.map(\.0.loadKey)
        var loads = (loadKeys.isEmpty ? [] : try CommandQueries.load(loadKeys, connection)).makeIterator()
        return try zip(commands, knowns).map { pending, known in
            let loaded = known == nil ? loads.next() : nil
            guard let decidedOn = known.map(CommandQueries.Loaded.init) ?? loaded else {
                throw EventStoreError.unreadableRow("the load gave fewer rows than it was asked for")
            }
            let device = DeviceKey(pending)
            let earlier = device.flatMap { decided.remoteStarts[$0] } ?? []
            let decision = try decide(pending, decidedOn, startedInBatch: earlier, lifecycle, connection)
            let stage: BatchEntry.Stage
            switch decision {
            case .append(let append):
                // Only an append is guarded against what is known being behind.
                if let known { decided.rules.add(pending.stream.app, version: known.rules.version) }
                if let device { decided.remoteStarts[device, default: []].append(pending.now) }
                stage = .appending(append)
            case _ where known != nil:
                stage = .answered(.decideAgain)
            case .answered(let answer):
                stage = .answered(answer)
            case .rejected(let rejection):
                stage = .rejected(rejection)
            }
            return BatchEntry(pending: pending, known: known, loaded: loaded, stage: stage)
        }
    }

    /// Remembers what the batch loaded and then wrote (it committed): the activities as they are
    /// now, and the rules of the apps loaded.
    private static func remember(_ entries: [BatchEntry], written: [StoredActivity], _ known: KnownActivities) {
        var rules: [AppID: KnownActivities.Rules] = [:]
        for entry in entries {
            if let row = entry.loaded, let context = row.context, let version = row.rulesVersion {
                rules[entry.pending.stream.app] = KnownActivities.Rules(context: context, version: version)
            }
        }
        known.remember(entries.compactMap(\.loaded?.activity) + written, rules: rules)
    }

    /// What one command does with what was loaded for it.
    enum Decision {
        case answered(BatchAnswer)
        case rejected(Rejection)
        case append(ActivityAppend)
    }

    private static func decide(
        _ pending: PendingCommand,
        _ loaded: CommandQueries.Loaded,
        startedInBatch: [Timestamp],
        _ lifecycle: Lifecycle,
        _ connection: Connection
    ) throws -> Decision {
        if let record = loaded.idempotencyRecord, let idempotency = pending.idempotency {
            return .answered(
                try BatchAnswer {
                    try EventStore.replay(record, of: idempotency, on: pending.stream, lifecycle, connection)
                }
            )
        }
        guard var context = loaded.context else {
            return .answered(.failure(EventStoreError.unknownApp(pending.stream.app)))
        }
        context.remoteStarts += startedInBatch
        let before = loaded.activity?.activity
        let version = before?.version ?? 0
        if let expected = pending.expectedVersion, expected != version {
            return .answered(
                .failure(EventStoreError.versionConflict(expected: expected, actual: before.map { _ in version }))
            )
        }
        let events: [ActivityEvent]
        do {
            events = try lifecycle.decide(pending.command, for: before, at: pending.now, context: context)
        } catch {
            return .rejected(error)
        }
        guard !events.isEmpty else {
            // A no-op; only an existing activity has one (a request always appends).
            return .answered(.accepted(loaded.activity!, []))
        }
        // `decide` only produces events that `evolve` accepts.
        let after = try! events.reduce(before) { try lifecycle.evolve($0, with: $1) }!
        return .append(
            ActivityAppend(
                events,
                on: pending.stream,
                from: before,
                to: after,
                lifecycle,
                idempotency: pending.idempotency,
                trace: pending.trace?.context
            )
        )
    }

    /// Records the rejections of commands that a cap refused at the append, in a statement of
    /// their own (the batch has committed).
    private static func record(
        _ rejections: [CommandQueries.BatchRejection],
        _ connection: Connection
    ) -> BatchEntry.Recording {
        guard !rejections.isEmpty else { return .recorded }
        do {
            _ = try CommandQueries.append([], recording: rejections, connection)
            return .recorded
        } catch let error as PostgresError where error.isIdempotencyKeyTaken {
            return .keyTakenMeanwhile
        } catch {
            return .failed(error)
        }
    }
}

extension CommandQueries.Loaded {
    /// What a command decided on a known activity finds, as a load would give it.
    init(_ known: KnownActivities.Known) {
        self.init(
            context: known.rules.context,
            activity: known.activity,
            idempotencyRecord: nil,
            rulesVersion: known.rules.version
        )
    }
}

extension BatchAnswer {
    static func accepted(_ stored: StoredActivity, _ events: [StoredEvent]) -> BatchAnswer {
        .result(CommandResult(outcome: .accepted(stored, events: events), isReplay: false))
    }

    static func rejected(_ rejection: Rejection) -> BatchAnswer {
        .result(CommandResult(outcome: .rejected(rejection), isReplay: false))
    }

    /// The result of `body`, or the store's failure it threw; a database failure is thrown on,
    /// as it fails the whole batch.
    init(_ body: () throws -> CommandResult) throws {
        do {
            self = .result(try body())
        } catch let error as EventStoreError {
            self = .failure(error)
        }
    }
}

/// The device a remote start goes to, to count a batch's remote starts per device.
private struct DeviceKey: Hashable {
    let app: AppID
    let device: DeviceID

    /// The device of a remote start; `nil` for any other command.
    init?(_ pending: PendingCommand) {
        guard pending.command.isRemoteStart, let device = pending.command.requestedDeviceID else { return nil }
        self.app = pending.stream.app
        self.device = device
    }
}

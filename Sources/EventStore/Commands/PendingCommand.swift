import ActivityLifecycle
import CanonicalJSON

/// A command waiting in the store's queue, and where its answer goes.
struct PendingCommand: Sendable {
    let command: Command
    let stream: StreamID
    let now: Timestamp
    let expectedVersion: Int?
    let idempotency: IdempotencyKey?
    /// Its sampled request's commit span and trace context, kept with its events.
    let trace: CommandTrace?
    /// How many times it was decided already, in batches that another command on its activity
    /// beat to the append.
    var decided = 0
    let answer: CheckedContinuation<CommandResult, any Error>
}

extension PendingCommand {
    /// Whether the command may be decided on what is known of its activity and app: not a remote
    /// start (it counts the device's earlier ones, which are never known), without an
    /// idempotency key (its record must be looked up), and not decided before (a command decided
    /// again is decided on a fresh load). An opening is decided with no open activities counted:
    /// its append decides the caps. One that expects another version than the known one is
    /// answered so only after a load, as every decision on what is known that does not append.
    var mayBeDecidedOnWhatIsKnown: Bool {
        decided == 0 && !command.isRemoteStart && idempotency == nil
    }

    var loadKey: CommandQueries.LoadKey {
        CommandQueries.LoadKey(
            stream: stream,
            isRequest: command.isRequest,
            deviceID: command.requestedDeviceID,
            idempotencyKey: idempotency?.key
        )
    }

    func record(_ rejection: Rejection) -> CommandQueries.BatchRejection {
        CommandQueries.BatchRejection(
            stream: stream,
            command: command.name,
            rejection: rejection,
            at: now,
            idempotency: idempotency
        )
    }

    /// What a refusal of this command's append comes to.
    enum RefusalOutcome {
        case answered(BatchAnswer)
        /// A rule refuses it, as it would have alone: to be recorded.
        case rejected(Rejection)
    }

    /// What a refusal of this command's append means for it.
    func outcome(of refusal: AppendRefusal, expectedVersion version: Int) -> RefusalOutcome {
        switch refusal {
        case .appCapReached(let limit, let count): return .rejected(.targetMaximumExceeded(limit: limit, count: count))
        case .globalCapReached(let limit, let count):
            return .rejected(.globalMaximumExceeded(limit: limit, count: count))
        case .deviceCapReached(let limit, let count):
            return .rejected(.deviceMaximumExceeded(deviceID: command.requestedDeviceID!, limit: limit, count: count))
        case .versionConflict where command.isRequest && expectedVersion == nil:
            return .rejected(.activityExists)
        case .versionConflict where expectedVersion == nil && decided + 1 < CommandBatch.attempts:
            return .answered(.decideAgain)
        case .versionConflict(let actual):
            return .answered(.failure(EventStoreError.versionConflict(expected: version, actual: actual)))
        }
    }
}

extension Command {
    var isRequest: Bool {
        if case .request = self { true } else { false }
    }

    var isRemoteStart: Bool {
        if case .request(let request) = self { request.remoteStart != nil } else { false }
    }

    /// The device a request names.
    var requestedDeviceID: DeviceID? {
        if case .request(let request) = self { request.deviceID } else { nil }
    }
}

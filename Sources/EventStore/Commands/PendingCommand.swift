import ActivityLifecycle
import CanonicalJSON
import Postgres

/// A command waiting in the store's queue, and where its answer goes.
struct PendingCommand: Sendable {
    let command: Command
    let stream: StreamID
    let now: Timestamp
    let expectedVersion: Int?
    let idempotency: IdempotencyKey?
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

    /// What a refusal of this command's append means for it.
    func outcome(
        of refusal: AppendRefusal,
        expectedVersion version: Int,
        _ lifecycle: Lifecycle,
        _ connection: Connection
    ) throws -> CommandBatch.Decision {
        switch refusal.sqlState {
        case "LL001": return .rejected(.targetMaximumExceeded(limit: refusal.limit, count: refusal.count))
        case "LL002": return .rejected(.globalMaximumExceeded(limit: refusal.limit, count: refusal.count))
        case "LL003":
            return .rejected(
                .deviceMaximumExceeded(deviceID: command.requestedDeviceID!, limit: refusal.limit, count: refusal.count)
            )
        case "LL409" where command.isRequest && expectedVersion == nil:
            return .rejected(.activityExists)
        case "LL409" where expectedVersion == nil && decided + 1 < CommandBatch.attempts:
            return .answered(.decideAgain)
        case "LL409":
            return .answered(.failure(EventStoreError.versionConflict(expected: version, actual: refusal.actual)))
        default:
            // The idempotency key: a concurrent command with the same key committed first.
            guard let idempotency else { preconditionFailure("a refusal of the idempotency key without a key") }
            return .answered(try BatchAnswer { try EventStore.replay(idempotency, on: stream, lifecycle, connection) })
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

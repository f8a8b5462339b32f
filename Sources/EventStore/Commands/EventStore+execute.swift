public import ActivityLifecycle
public import CanonicalJSON
import Foundation
import Postgres

extension EventStore {
    /// Runs a command: loads the activity, decides, and appends the events with the projection
    /// and the open counts in one statement. Rejections are recorded and returned.
    ///
    /// - Parameters:
    ///   - expectedVersion: when given, the command applies only to that version of the activity
    ///     (0: it must not exist yet); otherwise to the version loaded.
    ///   - idempotency: a key under which the outcome is recorded; a retry with the same key and
    ///     request gets the recorded outcome and appends nothing.
    /// - Throws: `EventStoreError.versionConflict` when another command appended first (never
    ///   retried here: the caller decides), `.idempotencyKeyReused`, `.unknownApp`, or a
    ///   database failure.
    @discardableResult
    public func execute(
        _ command: Command,
        on stream: StreamID,
        at now: Timestamp,
        expectedVersion: Int? = nil,
        idempotency: IdempotencyKey? = nil
    ) async throws -> CommandResult {
        let lifecycle = lifecycle
        let result = try await withConnection { connection in
            if let idempotency, let replay = try Self.replay(idempotency, on: stream, lifecycle, connection) {
                return replay
            }
            do {
                return try Self.retryingDeadlocks {
                    try Self.decideAndAppend(
                        command,
                        on: stream,
                        at: now,
                        expectedVersion: expectedVersion,
                        idempotency: idempotency,
                        lifecycle,
                        connection
                    )
                }
            } catch let error as PostgresError
                where error.isUniqueViolation && error.constraint == "idempotency_keys_pkey"
            {
                // A concurrent command with the same key committed first: answer as it was answered.
                guard let idempotency, let replay = try Self.replay(idempotency, on: stream, lifecycle, connection)
                else {
                    throw error
                }
                return replay
            }
        }
        StoreMetrics.record(result)
        if case .accepted(_, let events) = result.outcome, !events.isEmpty, !result.isReplay {
            notifier?.eventsAppended()
        }
        return result
    }

    private static func decideAndAppend(
        _ command: Command,
        on stream: StreamID,
        at now: Timestamp,
        expectedVersion: Int?,
        idempotency: IdempotencyKey?,
        _ lifecycle: Lifecycle,
        _ connection: Connection
    ) throws -> CommandResult {
        let loaded = try CommandQueries.load(
            stream,
            deviceID: command.requestedDeviceID,
            isRequest: command.isRequest,
            connection
        )
        let before = loaded.activity?.activity
        let version = before?.version ?? 0
        if let expectedVersion, expectedVersion != version {
            throw EventStoreError.versionConflict(
                expected: expectedVersion,
                actual: loaded.activity.map { _ in version }
            )
        }
        func rejected(_ rejection: Rejection) throws -> CommandResult {
            try CommandQueries.recordRejection(
                rejection,
                of: command,
                on: stream,
                at: now,
                idempotency: idempotency,
                connection
            )
            return CommandResult(outcome: .rejected(rejection), isReplay: false)
        }

        let events: [ActivityEvent]
        do {
            events = try lifecycle.decide(command, for: before, at: now, context: loaded.context)
        } catch {
            return try rejected(error)
        }
        guard !events.isEmpty else {
            // A no-op; only an existing activity has one (a request always appends).
            return CommandResult(outcome: .accepted(loaded.activity!, events: []), isReplay: false)
        }
        // `decide` only produces events that `evolve` accepts.
        let after = try! events.reduce(before) { try lifecycle.evolve($0, with: $1) }!
        do {
            let (stored, appended) = try append(
                events,
                on: stream,
                from: before,
                to: after,
                lifecycle,
                idempotency: idempotency,
                connection
            )
            return CommandResult(outcome: .accepted(stored, events: appended), isReplay: false)
        } catch let error as PostgresError {
            let details = AppendFailure(error)
            switch error.sqlState?.rawValue {
            case "LL001": return try rejected(.targetMaximumExceeded(limit: details.limit, count: details.count))
            case "LL002": return try rejected(.globalMaximumExceeded(limit: details.limit, count: details.count))
            case "LL003":
                let device = command.requestedDeviceID!
                return try rejected(
                    .deviceMaximumExceeded(deviceID: device, limit: details.limit, count: details.count)
                )
            case "LL409" where command.isRequest && expectedVersion == nil:
                return try rejected(.activityExists)
            case "LL409":
                throw EventStoreError.versionConflict(expected: version, actual: details.actual)
            default:
                throw error
            }
        }
    }
}

/// The JSON `DETAIL` of an error raised by `liveline_append`.
private struct AppendFailure {
    var limit = 0
    var count = 0
    var actual: Int?

    init(_ error: PostgresError) {
        guard let detail = error.detail,
            let value = try? JSONDecoder().decode([String: Int?].self, from: Data(detail.utf8))
        else { return }
        limit = (value["limit"] ?? nil) ?? 0
        count = (value["count"] ?? nil) ?? 0
        actual = value["actual"] ?? nil
    }
}

extension Command {
    var isRequest: Bool {
        if case .request = self { true } else { false }
    }

    /// The device a request names.
    var requestedDeviceID: DeviceID? {
        if case .request(let request) = self { request.deviceID } else { nil }
    }
}

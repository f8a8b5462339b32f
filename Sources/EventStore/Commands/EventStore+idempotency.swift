public import ActivityLifecycle
import Crypto
import Foundation
import Postgres

/// What `idempotency_keys` holds for a key: the request it came with, and its outcome.
struct IdempotencyRecord {
    let digest: [UInt8]
    let activity: ActivityID
    let outcome: RecordedOutcome

    init(digest: [UInt8], activity: String, outcome: JSONB) throws {
        guard let activity = ActivityID(rawValue: activity), let outcome = RecordedOutcome(json: outcome) else {
            throw EventStoreError.unreadableRow("an idempotency record for activity \(activity)")
        }
        self.digest = digest
        self.activity = activity
        self.outcome = outcome
    }
}

extension EventStore {
    /// The outcome recorded under `idempotency`'s key, looked up now: for a command whose key a
    /// concurrent command took first.
    static func replay(
        _ idempotency: IdempotencyKey,
        on stream: StreamID,
        _ lifecycle: Lifecycle,
        _ connection: Connection
    ) throws -> CommandResult {
        guard let record = try CommandQueries.idempotencyRecord(app: stream.app, key: idempotency.key, connection)
        else {
            throw EventStoreError.unreadableRow("idempotency key \(idempotency.key) taken, yet not recorded")
        }
        return try replay(record, of: idempotency, on: stream, lifecycle, connection)
    }

    /// The outcome of the earlier command recorded in `record`, as a retry with the same key
    /// and request gets it.
    ///
    /// - Throws: `EventStoreError.idempotencyKeyReused` when the key came with another request.
    static func replay(
        _ record: IdempotencyRecord,
        of idempotency: IdempotencyKey,
        on stream: StreamID,
        _ lifecycle: Lifecycle,
        _ connection: Connection
    ) throws -> CommandResult {
        guard record.digest == idempotency.requestDigest, record.activity == stream.activity else {
            throw EventStoreError.idempotencyKeyReused(key: idempotency.key)
        }
        switch record.outcome {
        case .rejected(let rejection):
            return CommandResult(outcome: .rejected(rejection), isReplay: true)
        case .accepted(let from, let to):
            // The activity as that command left it, folded from the log.
            let events = try ReadingQueries.events(of: stream, throughVersion: to, connection)
            guard let activity = try lifecycle.fold(events.map(\.event), of: stream) else {
                throw EventStoreError.unreadableRow("idempotency record \(idempotency.key) names missing events")
            }
            let stored = StoredActivity(
                stream: stream,
                activity: activity,
                nextDeadline: lifecycle.nextDeadline(of: activity)
            )
            return CommandResult(
                outcome: .accepted(stored, events: events.filter { $0.event.version > from }),
                isReplay: true
            )
        }
    }
}

extension ActivityID {
    /// The id of an activity a request names none for: random, or — with an idempotency key —
    /// derived from the app and the key, so that a retry names the same activity. Both are
    /// UUIDs in lowercase.
    public static func generated(for app: AppID, idempotencyKey key: String?) -> ActivityID {
        guard let key else { return ActivityID(uncheckedRawValue: UUID().uuidString.lowercased()) }
        var bytes = Array(SHA256.hash(data: Array("\(app)\n\(key)".utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80  // version 8: custom
        bytes[8] = (bytes[8] & 0x3F) | 0x80  // the RFC 9562 variant
        let uuid = bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        return ActivityID(uncheckedRawValue: uuid.uuidString.lowercased())
    }
}

public import ActivityLifecycle

/// An event as stored in the log: its global position and when it was recorded.
public struct StoredEvent: Hashable, Sendable {
    /// Strictly increasing along the log; see `EventStore.events(after:)`.
    public let position: Int64
    public let stream: StreamID
    public let event: ActivityEvent
    /// When the writing transaction ran.
    public let recordedAt: Timestamp
}

/// An activity as projected: its state and its next time-driven transition.
public struct StoredActivity: Hashable, Sendable {
    public let stream: StreamID
    public let activity: Activity
    public let nextDeadline: Deadline?

    public init(stream: StreamID, activity: Activity, nextDeadline: Deadline?) {
        self.stream = stream
        self.activity = activity
        self.nextDeadline = nextDeadline
    }
}

/// What a command did.
public enum CommandOutcome: Hashable, Sendable {
    /// Accepted: the activity after the command, and the events it appended (none for a no-op).
    case accepted(StoredActivity, events: [StoredEvent])
    /// Refused by a rule; recorded in `rejections`.
    case rejected(Rejection)
}

/// The outcome, and whether it is the recorded outcome of an earlier command with the same
/// idempotency key (nothing was appended this time).
public struct CommandResult: Hashable, Sendable {
    public let outcome: CommandOutcome
    public let isReplay: Bool
}

/// An idempotency key and a digest of the request it came with.
public struct IdempotencyKey: Hashable, Sendable {
    public let key: String
    /// SHA-256 of the request; the same key with another request is refused.
    public let requestDigest: [UInt8]

    public init(key: String, requestDigest: [UInt8]) {
        self.key = key
        self.requestDigest = requestDigest
    }
}

/// Failures of the store that are not rejections by a rule.
public enum EventStoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The activity's version was not the expected one: someone else appended first.
    case versionConflict(expected: Int, actual: Int?)
    /// The idempotency key was used before with a different request.
    case idempotencyKeyReused(key: String)
    /// No such app.
    case unknownApp(AppID)
    /// A stored row could not be read back (a bug or a hand-edited database).
    case unreadableRow(String)
    /// Another replay is running on the database.
    case replayInProgress
    /// A stream the state machine cannot fold (a hand-edited log).
    case corruptStream(CorruptionError)

    public var description: String {
        switch self {
        case .versionConflict(let expected, let actual):
            "version conflict: expected version \(expected), the activity is at \(actual.map(String.init) ?? "nothing")"
        case .idempotencyKeyReused(let key):
            "idempotency key \"\(key)\" was already used with a different request"
        case .unknownApp(let app):
            "no app \(app)"
        case .unreadableRow(let reason):
            "unreadable stored row: \(reason)"
        case .replayInProgress:
            "another replay is running on this database; try again when it has finished"
        case .corruptStream(let corruption):
            "the log cannot be folded: \(corruption)"
        }
    }
}

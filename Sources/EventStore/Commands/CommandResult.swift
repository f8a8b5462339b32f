public import ActivityLifecycle

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

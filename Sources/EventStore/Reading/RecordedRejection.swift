public import ActivityLifecycle
public import CanonicalJSON

/// A refused command, as recorded.
public struct RecordedRejection: Hashable, Sendable {
    public let app: AppID
    public let activity: String?
    public let command: String
    public let code: String
    public let details: [String: JSONValue]
    public let occurredAt: Timestamp

    /// A refusal as a row of `rejections` records it, read from the live table or an archive.
    package init(
        app: AppID,
        activity: String?,
        command: String,
        code: String,
        details: [String: JSONValue],
        occurredAt: Timestamp
    ) {
        self.app = app
        self.activity = activity
        self.command = command
        self.code = code
        self.details = details
        self.occurredAt = occurredAt
    }
}

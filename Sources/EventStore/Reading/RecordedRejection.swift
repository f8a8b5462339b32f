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
}

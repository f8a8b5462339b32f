public import CanonicalJSON

/// What a Live Activity shows: the state its `ContentState` decodes, and when it goes stale.
public struct ActivityContent: Hashable, Sendable {
    /// The JSON object the app's `ContentState` decodes.
    public var contentState: JSONObject
    /// When the system marks the activity stale, unless an update comes first.
    public var staleDate: Timestamp?
    /// How the system orders the app's activities; higher is more relevant.
    public var relevanceScore: RelevanceScore?

    public init(contentState: JSONObject, staleDate: Timestamp? = nil, relevanceScore: RelevanceScore? = nil) {
        self.contentState = contentState
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
    }
}

/// A relevance score: a finite number ≥ 0.
public struct RelevanceScore: Hashable, Sendable, Codable, Comparable {
    public let value: Double

    public init?(_ value: Double) {
        guard value.isFinite, value >= 0 else { return nil }
        self.value = value
    }

    public static func < (lhs: RelevanceScore, rhs: RelevanceScore) -> Bool { lhs.value < rhs.value }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let score = RelevanceScore(try container.decode(Double.self)) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "relevanceScore must be a number ≥ 0"
            )
        }
        self = score
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// An alert shown (and optionally sounded) with an update.
public struct Alert: Hashable, Sendable {
    public var title: String
    public var body: String
    public var sound: String?

    public init(title: String, body: String, sound: String? = nil) {
        self.title = title
        self.body = body
        self.sound = sound
    }
}

/// APNs priority of an update: 10 is delivered at once and counts against the update budget;
/// 5 is delivered opportunistically and never counts.
public enum Priority: Int, Hashable, Sendable, Codable, CaseIterable {
    case low = 5
    case high = 10
}

/// How the activity receives push updates.
public enum PushType: String, Hashable, Sendable, Codable, CaseIterable {
    /// Updates addressed by the activity's own push token.
    case token
    /// Updates broadcast on a channel.
    case channel
}

/// When an ended activity leaves the screen.
public enum DismissalPolicy: Hashable, Sendable {
    /// At once, in the same transaction as the end.
    case immediate
    /// After the platform's dismissal window (4 hours).
    case `default`
    /// At a date, clamped into [end, end + dismissal window]; a date not after the end means immediate.
    case after(Timestamp)
}

/// How the system presents the activity (ActivityKit's `ActivityStyle`).
public enum ActivityStyle: String, Hashable, Sendable, Codable, CaseIterable {
    /// Stays on the Lock Screen until it ends and is dismissed.
    case standard
    /// Leaves the Lock Screen once the person has seen it.
    case transient
}

/// Who caused an event.
public enum Cause: String, Hashable, Sendable, Codable, CaseIterable {
    case app
    case device
    case system
}

public import CanonicalJSON

/// The next time-driven transition of an activity and when it is due.
public struct Deadline: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable, Codable, CaseIterable {
        /// A scheduled activity starts (`pending` → `active`).
        case start
        /// The stale date passes (`active` → `stale`).
        case stale
        /// The lifetime runs out (`active`/`stale` → `ended`).
        case lifetime
        /// The dismissal deadline comes (`ended` → `dismissed`).
        case dismissal
    }

    public var kind: Kind
    public var due: Timestamp

    public init(kind: Kind, due: Timestamp) {
        self.kind = kind
        self.due = due
    }

    /// The system command that applies this deadline.
    public var command: Command {
        switch kind {
        case .start: .start
        case .stale: .markStale
        case .lifetime: .end(.init(dismissal: .default, reason: .lifetimeExceeded))
        case .dismissal: .dismiss(.deadline)
        }
    }
}

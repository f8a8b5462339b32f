/// The five states of an activity. `dismissed` is final.
public enum ActivityState: String, Hashable, Sendable, Codable, CaseIterable {
    case pending
    case active
    case stale
    case ended
    case dismissed

    /// Open activities count against the caps: `pending`, `active` and `stale`.
    public var isOpen: Bool {
        switch self {
        case .pending, .active, .stale: true
        case .ended, .dismissed: false
        }
    }
}

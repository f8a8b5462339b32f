extension ActivityEvent {
    /// The deadline this event applied, for events the system records when one comes due.
    public var deadlineKind: Deadline.Kind? {
        switch payload {
        case .started: .start
        case .becameStale: .stale
        case .ended(let ended) where ended.reason == .lifetimeExceeded: .lifetime
        case .dismissed(let dismissed) where dismissed.reason != .userRemoved: .dismissal
        default: nil
        }
    }
}

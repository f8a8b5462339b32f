import Synchronization

/// What the delivery worker tells readiness: how many activities' logs it cannot fold now. Their
/// pushes wait (each is logged as an error with why, and reloaded until it folds), so `/readyz`
/// says the server is degraded, and which way, while the API itself keeps serving.
public final class DeliveryHealth: Sendable {
    private let unreadable = Atomic(0)

    public init() {}

    /// Activities whose pushes wait because their log cannot be folded.
    public var unreadableStreams: Int { unreadable.load(ordering: .relaxed) }

    func report(unreadableStreams count: Int) {
        unreadable.store(count, ordering: .relaxed)
    }
}

import Synchronization

/// What the log's maintenance tells readiness: why its last run failed, until one succeeds. The
/// API keeps serving meanwhile, so `/readyz` says the server is degraded, and why.
public final class MaintenanceHealth: Sendable {
    private let lastFailure = Mutex<String?>(nil)

    public init() {}

    /// Why the last run failed; `nil` when it succeeded (or none has run yet).
    public var failure: String? { lastFailure.withLock { $0 } }

    func report(failure: String?) {
        lastFailure.withLock { $0 = failure }
    }
}

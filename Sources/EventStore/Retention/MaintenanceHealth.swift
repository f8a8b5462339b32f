import Synchronization

/// What the log's maintenance tells readiness: why the last run of each of its jobs failed,
/// until one of that job succeeds. The API keeps serving meanwhile, so `/readyz` says the server
/// is degraded, and why.
public final class MaintenanceHealth: Sendable {
    /// The jobs of `LogMaintenance`, each failing and recovering on its own.
    public enum Job: String, Sendable, CaseIterable {
        /// Creates the partitions ahead and reads the log's footprint.
        case partitions
        /// Expires idempotency keys and retires partitions.
        case retention
    }

    private let failures = Mutex<[Job: String]>([:])

    public init() {}

    /// Why the jobs' last runs failed, each named (`retention: …`); `nil` when none did (or none
    /// has run yet).
    public var failure: String? {
        failures.withLock { failures in
            let reasons = Job.allCases.compactMap { job in failures[job].map { "\(job.rawValue): \($0)" } }
            return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
        }
    }

    func report(_ job: Job, failure: String?) {
        failures.withLock { $0[job] = failure }
    }
}

import Metrics
import Prometheus

/// The write path's batches, as the store counts them in its metrics
/// (`liveline_command_batches_total`, `liveline_batched_commands_total`): a benchmark reads them
/// before and after a run to report the commands per batch it saw.
public struct WriteBatches: Sendable {
    private let registry: PrometheusCollectorRegistry

    /// Bootstraps the process's metrics with a registry of their own (once per process).
    public static func bootstrap() -> WriteBatches {
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return WriteBatches(registry: registry)
    }

    /// The batches and the commands they ran so far.
    public func count() -> (batches: Double, commands: Double) {
        let lines = registry.emitToString().split(separator: "\n")
        func value(of counter: String) -> Double {
            lines.first { $0.hasPrefix(counter + " ") }.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
        }
        return (value(of: "liveline_command_batches_total"), value(of: "liveline_batched_commands_total"))
    }

    /// The commands per batch since `earlier`.
    public func commandsPerBatch(since earlier: (batches: Double, commands: Double)) -> Double {
        let now = count()
        return (now.commands - earlier.commands) / max(now.batches - earlier.batches, 1)
    }
}

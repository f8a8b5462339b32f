import ActivityLifecycle
import CanonicalJSON
import Metrics

/// What the store counts: events appended by type, refusals by code, and the batches of the
/// write path (their mean size is commands over batches; those that skipped the load).
enum StoreMetrics {
    static func recordBatch(of commands: Int) {
        Counter(label: "liveline_command_batches_total").increment()
        Counter(label: "liveline_batched_commands_total").increment(by: commands)
    }

    /// A batch whose commands were all decided on what the writers knew, without a load.
    static func recordBatchWithoutLoad() {
        Counter(label: "liveline_command_batches_without_load_total").increment()
    }

    static func record(_ result: CommandResult) {
        guard !result.isReplay else { return }
        switch result.outcome {
        case .accepted(_, let events):
            recordAppended(events)
        case .rejected(let rejection):
            Counter(label: "liveline_rejections_total", dimensions: [("code", rejection.code)]).increment()
        }
    }

    static func recordAppended(_ events: [StoredEvent]) {
        for event in events {
            Counter(label: "liveline_events_appended_total", dimensions: [("type", event.event.type.rawValue)])
                .increment()
        }
    }
}

import CanonicalJSON
import EventStore
import Metrics

/// The delivery worker's metrics, made once: `liveline_deliveries_total{outcome}` counts every
/// outcome as it is recorded (so superseded pushes and pushes waiting for a token show too);
/// `liveline_apns_request_seconds` times each request to APNs and
/// `liveline_delivery_commit_to_answer_seconds` each delivered push from its event's commit;
/// `liveline_delivery_unreadable_streams` is how many activities the worker cannot fold (their
/// pushes wait: never more than 0 unless the log is corrupt).
struct DeliveryMetrics: Sendable {
    private let outcomes: [DeliveryRecord.Outcome: Counter]
    private let request: Timer
    private let commitToAnswer: Timer
    private let unreadable: Gauge

    init(factory: any MetricsFactory) {
        outcomes = Dictionary(
            uniqueKeysWithValues: DeliveryRecord.Outcome.allCases.map { outcome in
                (
                    outcome,
                    Counter(
                        label: "liveline_deliveries_total",
                        dimensions: [("outcome", outcome.rawValue)],
                        factory: factory
                    )
                )
            }
        )
        request = Timer(label: "liveline_apns_request_seconds", factory: factory)
        commitToAnswer = Timer(label: "liveline_delivery_commit_to_answer_seconds", factory: factory)
        unreadable = Gauge(label: "liveline_delivery_unreadable_streams", factory: factory)
    }

    /// How many streams the worker cannot fold now.
    func unreadableStreams(_ count: Int) {
        unreadable.record(count)
    }

    /// Outcomes now in the `deliveries` table.
    func recorded(_ records: [DeliveryRecord]) {
        var counts: [DeliveryRecord.Outcome: Int] = [:]
        for record in records { counts[record.outcome, default: 0] += 1 }
        for (outcome, count) in counts { outcomes[outcome]?.increment(by: count) }
    }

    /// A request APNs answered (or did not) after `latency`; a delivered push `committedAt`.
    func answered(_ record: DeliveryRecord, committedAt: Timestamp, answeredAt: Timestamp) {
        if let latency = record.latency { request.recordNanoseconds(latency.microseconds * 1_000) }
        if record.outcome == .delivered {
            commitToAnswer.recordNanoseconds((answeredAt - committedAt).microseconds * 1_000)
        }
    }
}

import ActivityLifecycle
public import CanonicalJSON
public import Logging
public import Metrics
public import ServiceLifecycle

/// Applies time-driven transitions as they come due (SPEC §5): claims due activities in
/// batches, applies their deadlines through the state machine, settles the remote starts whose
/// confirmation window ran out (SPEC §9), and otherwise sleeps until the
/// earliest deadline — or until an append anywhere (through `listener`) may have set an earlier
/// one. Deadlines live in the database, so one missed while the server was down is applied when
/// it comes back, with its original due time. Several workers may run at once (in one process
/// or several): each deadline is applied exactly once. Run it as a `Service`.
public struct DeadlineWorker: Service {
    let store: EventStore
    let listener: AppendListener?
    let clock: @Sendable () -> Timestamp
    let batchSize: Int
    let logger: Logger
    let metrics: any MetricsFactory

    /// - Parameters:
    ///   - listener: wakes the worker when events are appended; without one it looks again every
    ///     second at most.
    ///   - clock: the current time (injected, so tests control it).
    ///   - metrics: where `liveline_deadlines_applied_total{kind}`,
    ///     `liveline_deadline_lag_seconds` (time from due to recorded) and
    ///     `liveline_remote_starts_total{verdict}` go.
    public init(
        store: EventStore,
        listener: AppendListener?,
        clock: @escaping @Sendable () -> Timestamp = Timestamp.now,
        batchSize: Int = 500,
        logger: Logger,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) {
        self.store = store
        self.listener = listener
        self.clock = clock
        self.batchSize = batchSize
        self.logger = logger
        self.metrics = metrics
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await runOnce()
            }
        }
    }

    /// Applies what is due, then waits until something may be due again.
    func runOnce() async {
        let generation = listener?.generation
        do {
            let applied = try await store.applyDueDeadlines(at: clock(), limit: batchSize)
            let settled = try await store.settleDueStarts(at: clock(), limit: batchSize)
            if !applied.isEmpty || !settled.isEmpty {
                logger.debug(
                    "applied deadlines",
                    metadata: ["events": "\(applied.count)", "remote starts": "\(settled.verdicts.count)"]
                )
                record(applied)
                record(settled)
                return  // there may be more due: look again at once
            }
            let next = [try await store.earliestDeadline(), try await store.earliestStartConfirmation()]
                .compactMap { $0 }.min()
            // A start accepted from now on is due a window after it is: looking again within a
            // window finds it in time, though its acceptance wakes nothing here.
            let window = store.lifecycle.policy.startConfirmationWindow
            let wait = min(next.map { $0 - clock() } ?? .seconds(3600), window)
            await sleep(upTo: max(wait, .zero), after: generation)
        } catch {
            // Cancelled: the process stops (the pool may be shut down already); nothing to say.
            if Task.isCancelled { return }
            logger.retrying("applying deadlines failed; retrying shortly", after: error)
            await sleep(upTo: .seconds(1), after: generation)
        }
    }

    private func record(_ applied: [StoredEvent]) {
        let lag = Timer(label: "liveline_deadline_lag_seconds", factory: metrics)
        for stored in applied {
            guard let kind = stored.event.deadlineKind else { continue }
            Counter(label: "liveline_deadlines_applied_total", dimensions: [("kind", kind.rawValue)], factory: metrics)
                .increment()
            lag.recordNanoseconds((stored.recordedAt - stored.event.occurredAt).microseconds * 1_000)
        }
    }

    private func record(_ settled: EventStore.SettledStarts) {
        for verdict in settled.verdicts {
            Counter(
                label: "liveline_remote_starts_total",
                dimensions: [("verdict", verdict.rawValue)],
                factory: metrics
            )
            .increment()
        }
        for stored in settled.appended {
            guard case .startUnconfirmed(let flag) = stored.event.payload else { continue }
            // The app's backend is told through its event feed; the operator, here.
            logger.notice(
                "remote start unconfirmed: no push token came within the window",
                metadata: [
                    "app": "\(stored.stream.app)", "activity": "\(stored.stream.activity)",
                    "unconfirmed_in_a_row": "\(flag.unconfirmedInARow)", "token_suspect": "\(flag.tokenSuspect)",
                ]
            )
        }
    }

    private func sleep(upTo duration: Duration, after generation: UInt64?) async {
        guard duration > .zero else { return }
        if let listener, let generation, listener.isListening {
            await listener.wait(after: generation, timeout: duration)
        } else {
            try? await Task.sleep(for: min(duration, .seconds(1)))
        }
    }
}

import ActivityLifecycle
public import CanonicalJSON
public import EventStore
import Foundation
public import Logging
public import Metrics
import NIOConcurrencyHelpers
public import ServiceLifecycle

/// Delivers the log to devices (SPEC §7). It follows the log by position (the gap-free reading),
/// renders each event that changes what a device shows, and sends it through `APNsClient`:
///
/// - at least once: a shard's cursor passes an event only once its delivery is settled and
///   recorded, so after a crash or restart every push not confirmed is sent again;
/// - once in normal operation: shards of the log are held under leases, so two workers never
///   deliver the same activity; a crashed worker's leases run out and another takes over;
/// - in order and latest wins, per activity (`ActivityLane`);
/// - retried with backoff and jitter for the answers that call for it, until the push expires;
///   dead tokens invalidated, apps with refused credentials suspended (`APNsVerdict`).
///
/// Every attempt and decision is appended to `deliveries`. Run it as a `Service`.
public struct DeliveryWorker: Service {
    public struct Configuration: Sendable {
        /// Requests in flight at once, over all apps.
        public var maximumInFlight = 256
        /// Events read from the log at once.
        public var batchSize = 1000
        /// How long a shard's lease lasts without renewal: how soon a crashed worker's shards
        /// are taken over.
        public var lease: Duration = .seconds(10)
        /// How often leases are renewed and shares rebalanced.
        public var leaseRenewal: Duration = .seconds(2)
        /// The first retry's delay; each next one doubles, up to `maximumBackoff`, with jitter.
        public var initialBackoff: Duration = .seconds(1)
        public var maximumBackoff: Duration = .seconds(60)
        /// How long an app's credentials and suspension, once read, are trusted when no change
        /// is announced (a change made through Liveline is announced to every process at once).
        public var appRefresh: Duration = .seconds(5)
        /// Outcomes are recorded (with the cursors they move) in one transaction at most this
        /// often, or at once when `recordBatch` are waiting.
        public var recordInterval: Duration = .milliseconds(20)
        public var recordBatch = 500
        /// The least time from the start of one turn of the delivery loop to the next, once the
        /// log is read to its end: under load, what came meanwhile (answers, appends) is handled
        /// in one turn instead of one each, at most this much later. A turn has costs of its own
        /// (a wake, the book's lock, a hop to the APNs connections): 2 ms of spacing served 11–20 %
        /// more HTTP updates with delivery on, in pairs (BENCHMARKS.md). A backlog is read without it.
        public var turnSpacing: Duration = .milliseconds(2)
        /// Whether each push APNs answers is traced (`PushTraces`): when the process exports
        /// traces.
        public var tracesPushes = false

        public init() {}
    }

    let store: EventStore
    let client: APNsClient
    let secretKey: SecretKey
    let listener: AppendListener?
    let configuration: Configuration
    let clock: @Sendable () -> Timestamp
    let workerID: String
    let logger: Logger
    let metrics: DeliveryMetrics
    let health: DeliveryHealth
    let traces: PushTraces?

    /// - Parameters:
    ///   - secretKey: opens the apps' sealed APNs keys.
    ///   - listener: wakes the worker when events are appended; without one it polls.
    ///   - metrics: `liveline_deliveries_total{outcome}`, `liveline_apns_request_seconds`,
    ///     `liveline_delivery_commit_to_answer_seconds`, `liveline_delivery_unreadable_streams`.
    ///   - health: what `/readyz` is told.
    public init(
        store: EventStore,
        client: APNsClient,
        secretKey: SecretKey,
        listener: AppendListener?,
        configuration: Configuration = Configuration(),
        clock: @escaping @Sendable () -> Timestamp = Timestamp.now,
        logger: Logger,
        metrics: any MetricsFactory = MetricsSystem.factory,
        health: DeliveryHealth = DeliveryHealth()
    ) {
        self.store = store
        self.client = client
        self.secretKey = secretKey
        self.listener = listener
        self.configuration = configuration
        self.clock = clock
        self.workerID = "\(ProcessInfo.processInfo.hostName)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        self.logger = logger
        self.metrics = DeliveryMetrics(factory: metrics)
        self.health = health
        self.traces = configuration.tracesPushes ? PushTraces() : nil
    }

    public func run() async throws {
        let book = NIOLockedValueBox(
            DeliveryBook(renderer: PushRenderer(policy: store.lifecycle.policy), lifecycle: store.lifecycle)
        )
        let cycle = DeliveryCycle(
            book: book,
            ledger: DatabaseLedger(
                store: store,
                secretKey: secretKey,
                workerID: workerID,
                logger: logger,
                readsTraceContexts: configuration.tracesPushes
            ),
            batchSize: configuration.batchSize,
            appRefresh: configuration.appRefresh,
            clock: clock
        )
        let stopping = NIOLockedValueBox(false)
        let wakeup = Wakeup()
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await maintainLeases(book, wakeup: wakeup) }
                group.addTask { await relayAppends(to: wakeup) }
                group.addTask { await relayCredentialChanges(to: book, wakeup: wakeup) }
                await deliver(cycle, stopping: stopping, wakeup: wakeup)
                group.cancelAll()
            }
            // No lease is renewed or claimed any more: leave, even when stopped by cancellation
            // (a task of its own, which the cancellation does not reach, so the pool lends).
            await Task { await leave(cycle) }.value
        } onGracefulShutdown: {
            stopping.withLockedValue { $0 = true }
            wakeup.signal()
        }
    }

    // MARK: The delivery loop

    /// Reads, sends and records until shutdown; then lets what is on the wire finish.
    private func deliver(
        _ cycle: DeliveryCycle<DatabaseLedger>,
        stopping: NIOLockedValueBox<Bool>,
        wakeup: Wakeup
    ) async {
        let book = cycle.book
        let answers = Answers()
        var readGeneration: UInt64? = nil
        var lastRead = clock()
        var lastRecord = clock()
        while !Task.isCancelled {
            let turnStarted = ContinuousClock.now
            finish(answers.take(), book)
            let isStopping = stopping.withLockedValue { $0 }
            if isStopping && book.withLockedValue({ $0.inFlight }) == 0 { break }
            let generation = listener?.generation
            var caughtUp = true
            do {
                // Read when told to, when appends were announced, and once a second in any case (an
                // announcement is a hint, never a promise).
                let mustRead = book.withLockedValue { $0.mustRead || !$0.shardChanges.isEmpty }
                if !isStopping
                    && (mustRead || generation == nil || generation != readGeneration
                        || clock() - lastRead >= .seconds(1))
                {
                    caughtUp = try await cycle.read()
                    lastRead = clock()
                    if caughtUp { readGeneration = generation }
                }
                if !isStopping {
                    try await cycle.prepare()
                    send(
                        cycle.takeReady(limit: configuration.maximumInFlight - book.withLockedValue { $0.inFlight }),
                        answers: answers,
                        wakeup: wakeup
                    )
                }
                let (waiting, drained) = book.withLockedValue { ($0.unrecorded, !$0.drained.isEmpty) }
                if drained || waiting >= configuration.recordBatch
                    || (waiting > 0 && clock() - lastRecord >= configuration.recordInterval)
                {
                    metrics.recorded(try await cycle.record())
                    lastRecord = clock()
                }
                report(book)
            } catch {
                report(book)
                if Task.isCancelled { break }
                logger.retrying("delivery failed; retrying shortly", after: error)
                try? await Task.sleep(for: .seconds(1))
                continue
            }
            guard caughtUp else { continue }
            // Under load the turns are spaced, so that answers and appends gather into larger batches.
            let nextTurn = turnStarted + configuration.turnSpacing
            if ContinuousClock.now < nextTurn { try? await Task.sleep(until: nextTurn) }
            await pause(book, wakeup: wakeup, lastRecord: lastRecord)
        }
    }

    /// Hands `sends` to the client; their answers gather in `answers`, and the first one waiting
    /// wakes the loop.
    private func send(_ sends: [DeliveryBook.Send], answers: Answers, wakeup: Wakeup) {
        guard !sends.isEmpty else { return }
        logger.trace("sending", metadata: ["pushes": "\(sends.count)"])
        let started = clock()
        client.send(sends.map { ($0.request, $0.credentials) }) { [clock] index, response in
            let now = clock()
            let answer = Answer(send: sends[index], response: response, latency: now - started, at: now)
            if answers.add(answer) { wakeup.signal() }
        }
    }

    /// Gives the book the answers that came, in one turn of its lock.
    private func finish(_ answered: [Answer], _ book: NIOLockedValueBox<DeliveryBook>) {
        guard !answered.isEmpty else { return }
        let records = book.withLockedValue { book in
            answered.map { answer in
                book.finish(
                    answer.send,
                    response: answer.response,
                    latency: answer.latency,
                    at: answer.at,
                    backoff: backoff
                )
            }
        }
        for (answer, record) in zip(answered, records) {
            metrics.answered(record, committedAt: answer.send.committedAt, answeredAt: answer.at)
        }
        traces?.record(
            zip(answered, records).map { answer, record in
                PushTraces.Answered(
                    send: answer.send,
                    record: record,
                    sentAt: answer.at - answer.latency,
                    answeredAt: answer.at
                )
            }
        )
    }

    /// Logs what the book noticed (streams it cannot fold, and their recovery), and counts the
    /// streams it cannot fold (for `/metrics` and `/readyz`).
    private func report(_ book: NIOLockedValueBox<DeliveryBook>) {
        let (notices, unreadable) = book.withLockedValue { ($0.takeNotices(), $0.unreadable.count) }
        metrics.unreadableStreams(unreadable)
        health.report(unreadableStreams: unreadable)
        for notice in notices {
            switch notice {
            case .unreadable(let stream, let reason):
                logger.error(
                    "delivery cannot fold an activity's log; its pushes wait while its whole history is loaded again",
                    metadata: ["app.id": "\(stream.app)", "activity.id": "\(stream.activity)", "reason": "\(reason)"]
                )
            case .stillUnreadable(let stream, let reason, let retryAt):
                logger.error(
                    "delivery still cannot fold an activity's log; its pushes wait",
                    metadata: [
                        "app.id": "\(stream.app)", "activity.id": "\(stream.activity)", "reason": "\(reason)",
                        "retry_at": "\(retryAt)",
                    ]
                )
            case .readable(let stream, let owed):
                logger.notice(
                    "delivery folds the activity's log again and sends what it owes",
                    metadata: ["app.id": "\(stream.app)", "activity.id": "\(stream.activity)", "pushes": "\(owed)"]
                )
            }
        }
    }

    /// Waits for an append, an answer, the next retry, or the time to record what is waiting;
    /// at most a second (the log is read once a second in any case), and 50 ms without a
    /// listener.
    private func pause(_ book: NIOLockedValueBox<DeliveryBook>, wakeup: Wakeup, lastRecord: Timestamp) async {
        var timeout: Duration = listener == nil ? .milliseconds(50) : .seconds(1)
        let (nextRetry, unrecorded) = book.withLockedValue { ($0.nextRetry, $0.unrecorded) }
        if let nextRetry { timeout = min(timeout, max(.zero, nextRetry - clock())) }
        if unrecorded > 0 { timeout = min(timeout, max(.zero, lastRecord + configuration.recordInterval - clock())) }
        await wakeup.wait(timeout: timeout)
    }

    /// Turns announcements that credentials changed (in this process or another) into fresh
    /// readings of every app before its next push, so that new credentials take effect at once.
    private func relayCredentialChanges(to book: NIOLockedValueBox<DeliveryBook>, wakeup: Wakeup) async {
        guard let listener else { return }
        await WorkerPolicy.follow(from: listener.credentialsGeneration) {
            await listener.waitForCredentials(after: $0, timeout: .seconds(1))
        } _: {
            book.withLockedValue { $0.credentialsChanged() }
            wakeup.signal()
        }
    }

    /// Turns the listener's announcements of appends into wake-ups.
    private func relayAppends(to wakeup: Wakeup) async {
        guard let listener else { return }
        await WorkerPolicy.follow(from: listener.generation) {
            await listener.wait(after: $0, timeout: .seconds(1))
        } _: {
            wakeup.signal()
        }
    }

    // MARK: Policy

    private func backoff(_ attempt: Int) -> Duration {
        WorkerPolicy.backoff(attempt, initial: configuration.initialBackoff, maximum: configuration.maximumBackoff)
    }
}

/// APNs' answer to a push, as it came back.
private struct Answer: Sendable {
    let send: DeliveryBook.Send
    let response: APNsResponse
    let latency: Duration
    let at: Timestamp
}

/// The answers that came back and the book has not yet been given.
private final class Answers: Sendable {
    private let waiting = NIOLockedValueBox<[Answer]>([])

    /// Keeps `answer`; `true` when it is the first one waiting (the loop must be woken).
    func add(_ answer: Answer) -> Bool {
        waiting.withLockedValue { waiting in
            waiting.append(answer)
            return waiting.count == 1
        }
    }

    /// Every answer waiting, and none is left.
    func take() -> [Answer] {
        waiting.withLockedValue { waiting in
            defer { waiting = [] }
            return waiting
        }
    }
}

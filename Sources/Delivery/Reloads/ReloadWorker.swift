import ActivityLifecycle
public import CanonicalJSON
public import EventStore
import Foundation
public import Logging
public import Metrics
import NIOConcurrencyHelpers
public import ServiceLifecycle

/// Sends widget and control reloads (docs/delivery.md, "Widgets and controls"). A request to many
/// devices is one row; this worker walks it from a cursor per delivery shard as it goes, a page
/// of devices at a time, so its memory holds still however many devices a request targets:
///
/// - shared between processes as delivery is: the reload shards are held under leases, a fair
///   share each, taken over from a crashed worker when its leases run out;
/// - at least once, writing nothing as a reload leaves: the worker knows what it has on its way,
///   a fan-out's cursor moves past a page when the page's outcomes are recorded, and a slot's due
///   reload stays written until its answer is; a worker that takes the shard over reads from
///   there, so it sends again at most what was on its way (after a kill -9 a device may get a
///   reload twice);
/// - within WidgetKit's budget: each slot's `ReloadPacing` sends at most one reload per the app's
///   interval and coalesces the requests inside it into one sent when it ends;
/// - every outcome recorded in `reload_deliveries`; dead tokens leave their slots, refused
///   credentials suspend the app (its reloads wait until they change), retries back off.
///
/// Run it as a `Service`.
public struct ReloadWorker: Service {
    public struct Configuration: Sendable {
        /// Reloads on their way at once.
        public var maximumInFlight = 256
        /// Reloads decided and waiting for room on the wire, at most: taken while the wire is
        /// full, so that it never waits for the database. Taken again once half are gone.
        public var readAhead = 512
        public var lease: Duration = .seconds(10)
        public var leaseRenewal: Duration = .seconds(2)
        public var initialBackoff: Duration = .seconds(1)
        public var maximumBackoff: Duration = .seconds(60)
        /// Tries of one reload before it fails (with the backoff, about five minutes).
        public var maximumAttempts = 8
        /// How long an app's credentials, once read, are trusted when no change is announced.
        public var appRefresh: Duration = .seconds(5)
        /// Outcomes are recorded at most this often, or at once when `recordBatch` wait.
        public var recordInterval: Duration = .milliseconds(20)
        public var recordBatch = 500

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
    /// By push type and outcome (`widgets delivered`).
    private let outcomes: [String: Counter]

    public init(
        store: EventStore,
        client: APNsClient,
        secretKey: SecretKey,
        listener: AppendListener?,
        configuration: Configuration = Configuration(),
        clock: @escaping @Sendable () -> Timestamp = Timestamp.now,
        logger: Logger,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) {
        self.store = store
        self.client = client
        self.secretKey = secretKey
        self.listener = listener
        self.configuration = configuration
        self.clock = clock
        self.workerID = "\(ProcessInfo.processInfo.hostName)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        self.logger = logger
        self.outcomes = Dictionary(
            uniqueKeysWithValues: ReloadOutcome.Kind.allCases.flatMap { outcome in
                ["widgets", "controls"].map { pushType in
                    (
                        "\(pushType) \(outcome.rawValue)",
                        Counter(
                            label: "liveline_reloads_total",
                            dimensions: [("push_type", pushType), ("outcome", outcome.rawValue)],
                            factory: metrics
                        )
                    )
                }
            }
        )
    }

    public func run() async throws {
        let book = NIOLockedValueBox(ReloadBook())
        let stopping = NIOLockedValueBox(false)
        let wakeup = Wakeup()
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                group.addTask { await maintainLeases(book, wakeup: wakeup) }
                group.addTask { await relayAnnouncements(to: book, wakeup: wakeup) }
                await send(book, stopping: stopping, wakeup: wakeup)
                group.cancelAll()
            }
            // A task of its own, which a cancellation does not reach, so the pool lends.
            await Task { await leave(book) }.value
        } onGracefulShutdown: {
            stopping.withLockedValue { $0 = true }
            wakeup.signal()
        }
    }

    // MARK: The loop

    /// Takes, sends and records until shutdown; then lets what is on its way answer.
    private func send(_ book: NIOLockedValueBox<ReloadBook>, stopping: NIOLockedValueBox<Bool>, wakeup: Wakeup) async {
        let ledger = DatabaseLedger(store: store, secretKey: secretKey, workerID: workerID, logger: logger)
        var lastRecord = clock()
        var nextDue: Timestamp? = nil
        while !Task.isCancelled {
            let isStopping = stopping.withLockedValue { $0 }
            var moreWaiting = false
            do {
                let unrecorded = book.withLockedValue { $0.unrecorded }
                if unrecorded >= configuration.recordBatch || isStopping
                    || (unrecorded > 0 && clock() - lastRecord >= configuration.recordInterval)
                {
                    try await record(book)
                    lastRecord = clock()
                }
                let releasable = book.withLockedValue { $0.takeReleasable() }
                if !releasable.isEmpty {
                    try await record(book)
                    try await store.releaseReloadShards(releasable, by: workerID)
                    logger.debug("gave reload shards up", metadata: ["shards": "\(releasable.sorted())"])
                }
                if isStopping {
                    if book.withLockedValue({ $0.onTheirWay == 0 && $0.unrecorded == 0 }) { break }
                } else {
                    sendReady(book, wakeup: wakeup)
                    if book.withLockedValue({ $0.readyCount <= configuration.readAhead / 2 }) {
                        (moreWaiting, nextDue) = try await take(book, ledger: ledger)
                        sendReady(book, wakeup: wakeup)
                    }
                }
            } catch {
                if Task.isCancelled { break }
                logger.retrying("sending reloads failed; retrying shortly", after: error)
                try? await Task.sleep(for: .seconds(1))
                continue
            }
            var timeout: Duration = .seconds(1)
            let (ready, unrecorded) = book.withLockedValue { ($0.readyCount, $0.unrecorded) }
            if moreWaiting && ready <= configuration.readAhead / 2 { continue }
            if let nextDue { timeout = min(timeout, max(.zero, nextDue - clock())) }
            if unrecorded > 0 {
                timeout = min(timeout, max(.zero, lastRecord + configuration.recordInterval - clock()))
            }
            await wakeup.wait(timeout: timeout)
        }
    }

    /// Takes the reloads of the shards, as many as the read-ahead has room for, each with its
    /// app's credentials (or held while the app has none that APNs takes). Returns whether more
    /// wait, and when the next one is due.
    private func take(
        _ book: NIOLockedValueBox<ReloadBook>,
        ledger: DatabaseLedger
    ) async throws -> (moreWaiting: Bool, nextDue: Timestamp?) {
        let now = clock()
        // Paused apps are read again now and then: new credentials resume them.
        let stale = book.withLockedValue { book in
            book.paused.filter { now - (book.apps[$0]?.readAt ?? now) >= configuration.appRefresh }
        }
        for app in stale {
            if let delivery = try await ledger.app(app, at: now) { book.withLockedValue { $0.know(app, delivery) } }
        }
        let (room, shards, paused, onTheirWay, reading) = book.withLockedValue {
            (configuration.readAhead - $0.readyCount, $0.sending, $0.paused, $0.pacing, $0.reading)
        }
        guard room > 0, !shards.isEmpty else { return (false, nil) }
        let work = try await store.takeReloads(
            in: shards,
            pausing: paused,
            limit: room,
            now: now,
            onTheirWay: onTheirWay,
            reading: reading
        )
        // The apps first: from here on nothing fails, so every page read waits only for its
        // reloads' answers.
        for app in Set(work.sends.map(\.slot.app)) {
            let known = book.withLockedValue { $0.apps[app] }
            guard known == nil || now - known!.readAt >= configuration.appRefresh else { continue }
            let delivery = try await ledger.app(app, at: now)
            book.withLockedValue { $0.know(app, delivery) }
        }
        var taken = work.due.map { (send: $0, page: Int?.none) }
        for page in work.pages {
            let number = book.withLockedValue { $0.read(page) }
            taken += page.sends.map { ($0, number) }
        }
        for (send, page) in taken {
            guard let app = book.withLockedValue({ $0.apps[send.slot.app] }) else {
                book.withLockedValue { $0.skip(send, page: page) }
                continue
            }
            guard app.resumes, let credentials = app.credentials else {
                book.withLockedValue { $0.hold(send, page: page, because: app, at: now) }
                continue
            }
            let bundleID = String(app.topic.dropLast(APNsRequest.topicSuffix.count))
            let reload = ReadyReload(
                send: send,
                request: ReloadPush.request(send, bundleID: bundleID, now: now),
                credentials: credentials
            )
            book.withLockedValue { $0.take(reload, page: page, at: now) }
        }
        return (work.moreWaiting, work.nextDue)
    }

    /// Puts the reloads taken on the wire, as many as it has room for. An answer wakes the loop
    /// when it is the first to record, or when it leaves half the wire free.
    private func sendReady(_ book: NIOLockedValueBox<ReloadBook>, wakeup: Wakeup) {
        let maximumInFlight = configuration.maximumInFlight
        let sending = book.withLockedValue { $0.takeReady(limit: maximumInFlight - $0.onTheirWay) }
        guard !sending.isEmpty else { return }
        let started = clock()
        let maximumAttempts = configuration.maximumAttempts
        client.send(sending.map { ($0.request, $0.credentials) }) { [clock] index, response in
            let now = clock()
            let reload = sending[index]
            let wake = book.withLockedValue { book in
                _ = book.answered(
                    reload.send,
                    request: reload.request,
                    response: response,
                    latency: now - started,
                    at: now,
                    maximumAttempts: maximumAttempts,
                    backoff: backoff
                )
                return book.unrecorded == 1 || book.onTheirWay == maximumInFlight / 2
            }
            if wake { wakeup.signal() }
        }
    }

    /// Records what was answered (and held); on failure it is kept for the next try.
    private func record(_ book: NIOLockedValueBox<ReloadBook>) async throws {
        let unrecorded = book.withLockedValue { $0.takeUnrecorded() }
        guard !unrecorded.outcomes.isEmpty || !unrecorded.cursors.isEmpty || !unrecorded.suspensions.isEmpty else {
            return
        }
        do {
            try await store.recordReloads(
                unrecorded.outcomes,
                cursors: unrecorded.cursors,
                suspensions: unrecorded.suspensions
            )
        } catch {
            book.withLockedValue { $0.restore(unrecorded) }
            throw error
        }
        book.withLockedValue { $0.recorded(unrecorded) }
        for outcome in unrecorded.outcomes {
            outcomes["\(outcome.send.slot.kind.pushType) \(outcome.kind.rawValue)"]?.increment()
        }
        for suspension in unrecorded.suspensions {
            logger.error(
                "APNs refused the app's credentials: its reloads wait until they are set again",
                metadata: [
                    "app.id": "\(suspension.app)", "status": "\(suspension.status)", "reason": "\(suspension.reason)",
                ]
            )
        }
    }

    // MARK: Leases

    /// Keeps a fair share of the reload shards, as the delivery worker does of the log's.
    private func maintainLeases(_ book: NIOLockedValueBox<ReloadBook>, wakeup: Wakeup) async {
        while !Task.isCancelled {
            do {
                let (living, held) = try await store.renewReloadLeases(of: workerID, lease: configuration.lease)
                let lost = book.withLockedValue { $0.held.subtracting(held) }
                if !lost.isEmpty {
                    logger.warning("reload leases ran out", metadata: ["shards": "\(lost.sorted())"])
                    book.withLockedValue { $0.drop(lost) }
                }
                let share = WorkerPolicy.share(among: living)
                if held.count > share {
                    book.withLockedValue { $0.drain(Set(held.sorted().suffix(held.count - share))) }
                } else if held.count < share {
                    let claimed = try await store.claimReloadShards(
                        share - held.count,
                        for: workerID,
                        lease: configuration.lease
                    )
                    if !claimed.isEmpty {
                        logger.debug("took reload shards", metadata: ["shards": "\(claimed.sorted())"])
                        book.withLockedValue { $0.adopt(claimed) }
                    }
                }
                wakeup.signal()
            } catch {
                if Task.isCancelled { return }
                logger.retrying("renewing reload leases failed", after: error)
            }
            try? await Task.sleep(for: configuration.leaseRenewal)
        }
    }

    /// Wakes the loop when a reload is requested anywhere, and has every app read again when
    /// credentials change anywhere.
    private func relayAnnouncements(to book: NIOLockedValueBox<ReloadBook>, wakeup: Wakeup) async {
        guard let listener else { return }
        await withDiscardingTaskGroup { group in
            group.addTask {
                await WorkerPolicy.follow(from: listener.reloadsGeneration) {
                    await listener.waitForReloads(after: $0, timeout: .seconds(1))
                } _: {
                    wakeup.signal()
                }
            }
            group.addTask {
                await WorkerPolicy.follow(from: listener.credentialsGeneration) {
                    await listener.waitForCredentials(after: $0, timeout: .seconds(1))
                } _: {
                    book.withLockedValue { $0.forgetApps() }
                    wakeup.signal()
                }
            }
        }
    }

    /// Records what was answered and gives every shard up, so the others take them at once.
    private func leave(_ book: NIOLockedValueBox<ReloadBook>) async {
        try? await record(book)
        let held = book.withLockedValue { $0.held }
        try? await store.releaseReloadShards(held, by: workerID)
        try? await store.leaveReloads(workerID)
    }

    private func backoff(_ attempt: Int) -> Duration {
        WorkerPolicy.backoff(attempt, initial: configuration.initialBackoff, maximum: configuration.maximumBackoff)
    }
}

import ActivityLifecycle
import CanonicalJSON
import EventStore

/// Everything a delivery worker knows, as a plain value: the shards it holds and how far it has
/// read each, the activities it follows (folded from the log), their lanes of pushes, and the
/// outcomes not yet recorded. Each input is a method; the worker performs the I/O around it
/// (reading the log, sending, recording), so the rules are tested without a network or a
/// database.
struct DeliveryBook {
    /// One push to send now, with what sending it needs.
    struct Send: Sendable {
        let stream: StreamID
        let position: Int64
        let version: Int
        let request: APNsRequest
        let committedAt: Timestamp
        let credentials: APNsCredentials
        /// 1 for the first attempt.
        let attempt: Int
    }

    /// What the worker writes in one transaction.
    struct Pending {
        var records: [DeliveryRecord] = []
        var invalidations: [TokenInvalidation] = []
        var suspensions: [Suspension] = []
        var isEmpty: Bool { records.isEmpty && invalidations.isEmpty && suspensions.isEmpty }
    }

    private struct Shard {
        /// Every event of the shard up to here has been absorbed.
        var read: Int64
        /// Being given up: nothing new is sent for it.
        var draining = false
    }

    let renderer: PushRenderer
    let lifecycle: Lifecycle
    /// How often a push is retried at most (besides its expiration).
    let maximumAttempts: Int

    private var shards: [Int: Shard] = [:]
    private var states: [StreamID: DeliveryState] = [:]
    private var lanes: [StreamID: ActivityLane] = [:]
    private var waiting: Set<StreamID> = []
    private var invalidTokens: [StreamID: [String: Timestamp]] = [:]
    private var settled: Set<Int64> = []
    private(set) var apps: [AppID: AppDelivery] = [:]
    private(set) var pending = Pending()
    /// Pushes on the wire.
    private(set) var inFlight = 0
    /// The cursors as last handed over to be recorded.
    private var recordedCursors: [Int: Int64] = [:]
    /// Set when shards are adopted: the log must be read from their cursors, whether or not
    /// anything was appended since.
    var mustRead = true
    /// Streams whose log could not be folded (corrupt), skipped; the worker logs them.
    private(set) var unreadable: [StreamID: String] = [:]

    init(renderer: PushRenderer, lifecycle: Lifecycle, maximumAttempts: Int = 20) {
        self.renderer = renderer
        self.lifecycle = lifecycle
        self.maximumAttempts = maximumAttempts
    }

    // MARK: Shards

    var heldShards: Set<Int> { Set(shards.keys) }

    /// Where to read the log from: the least-read shard being delivered.
    var readPosition: Int64? {
        shards.values.filter { !$0.draining }.map(\.read).min()
    }

    /// Takes shards over from their cursors; `settled` are positions after them whose delivery
    /// another worker (or this one, before a restart) already settled.
    mutating func adopt(_ cursors: [Int: Int64], settled: Set<Int64>) {
        for (shard, cursor) in cursors { shards[shard] = Shard(read: cursor) }
        self.settled.formUnion(settled)
        mustRead = mustRead || !cursors.isEmpty
    }

    /// Forgets shards (a lease lost, or given up): their activities are another worker's now.
    mutating func drop(_ dropped: Set<Int>) {
        for shard in dropped {
            shards[shard] = nil
            recordedCursors[shard] = nil
        }
        for stream in Set(states.keys).union(lanes.keys) where dropped.contains(DeliveryShard.of(stream)) {
            states[stream] = nil
            lanes[stream] = nil
            waiting.remove(stream)
            invalidTokens[stream] = nil
        }
    }

    /// Stops sending for these shards, so they can be given up once nothing is on the wire.
    mutating func drain(_ draining: Set<Int>) {
        for shard in draining { shards[shard]?.draining = true }
    }

    /// Draining shards with nothing on the wire, with the cursors to give them up at.
    var drained: [Int: Int64] {
        let busy = Set(lanes.filter { $0.value.onTheWire != nil }.keys.map(DeliveryShard.of))
        return cursors.filter { shards[$0.key]?.draining == true && !busy.contains($0.key) }
    }

    /// Each shard's cursor: just before its earliest unsettled push, or as far as it was read.
    var cursors: [Int: Int64] {
        var cursors = shards.mapValues(\.read)
        for (stream, lane) in lanes {
            guard let earliest = lane.earliestPosition else { continue }
            let shard = DeliveryShard.of(stream)
            cursors[shard] = min(cursors[shard] ?? earliest - 1, earliest - 1)
        }
        return cursors
    }

    // MARK: Reading the log

    /// Streams whose earlier events must be loaded before `events` can be folded.
    func missingPrefixes(in events: [StoredEvent]) -> [StreamID: Int] {
        var missing: [StreamID: Int] = [:]
        var seen: Set<StreamID> = []
        for stored in events where isMine(stored) && seen.insert(stored.stream).inserted {
            if states[stored.stream] == nil && stored.event.version > 1 {
                missing[stored.stream] = stored.event.version
            }
        }
        return missing
    }

    /// Apps of `events` not known yet.
    func unknownApps(in events: [StoredEvent]) -> Set<AppID> {
        Set(events.filter(isMine).map(\.stream.app)).subtracting(apps.keys)
    }

    /// Apps with pushes waiting whose reading is older than `age`, and suspended apps with pushes
    /// waiting (read again before each push is refused, so that new credentials resume at once).
    func staleApps(at now: Timestamp, olderThan age: Duration) -> Set<AppID> {
        Set(waiting.map(\.app)).filter { app in apps[app].map { $0.suspended || now - $0.readAt >= age } ?? true }
    }

    /// A reading of the app from the database. A suspension this book decided and has not yet
    /// recorded stays in force, as long as the credentials are the ones it suspended.
    mutating func learn(_ app: AppID, _ delivery: AppDelivery) {
        var delivery = delivery
        if let known = apps[app], known.suspended, known.credentialsUpdatedAt == delivery.credentialsUpdatedAt {
            delivery.suspended = true
        }
        apps[app] = delivery
    }

    /// The earlier events of streams (`missingPrefixes`) and their dead tokens.
    mutating func install(prefixes events: [StoredEvent], invalidations: [StreamID: [String: Timestamp]]) {
        for stored in events { fold(stored) }
        for (stream, tokens) in invalidations { invalidTokens[stream, default: [:]].merge(tokens) { max($0, $1) } }
    }

    /// Folds and renders events read from the log, in position order, from `readPosition` on:
    /// every shard being delivered has then read up to the last of them.
    mutating func absorb(_ events: [StoredEvent], at now: Timestamp) {
        guard let last = events.last?.position else { return }
        let reads = shards.mapValues(\.read)
        for shard in shards.keys where shards[shard]?.draining == false {
            shards[shard]?.read = max(reads[shard]!, last)
        }
        for stored in events where isMine(stored) {
            let shard = DeliveryShard.of(stored.stream)
            guard let read = reads[shard], shards[shard]?.draining == false, stored.position > read else { continue }
            guard let state = fold(stored) else { continue }
            guard settled.remove(stored.position) == nil, let app = apps[stored.stream.app] else { continue }
            switch renderer.render(stored, leaving: state, topic: app.topic) {
            case .silent:
                break
            case .awaitingToken:
                record(stored, .awaitingToken, at: now)
            case .undeliverable(.payloadTooLarge(let size)):
                record(stored, .undeliverable, reason: "payload of \(size) bytes over APNs' 4096", at: now)
            case .undeliverable(.malformedToken):
                record(stored, .undeliverable, reason: "the push token is not hexadecimal", at: now)
            case .push(let request):
                let push = ActivityLane.Push(
                    position: stored.position,
                    version: stored.event.version,
                    request: request,
                    committedAt: stored.recordedAt,
                    notBefore: now
                )
                if let superseded = lanes[stored.stream, default: ActivityLane()].offer(push) {
                    record(superseded, of: stored.stream, .superseded, at: now)
                }
                waiting.insert(stored.stream)
            }
            forgetIfDone(stored.stream)
        }
    }

    // MARK: Sending

    /// Pushes that may go now (at most `limit`), on lanes with nothing on the wire. Pushes that
    /// must not go are settled here: the app has no credentials or is suspended, the token is
    /// dead, or the push expired.
    mutating func takeReady(at now: Timestamp, limit: Int) -> [Send] {
        var sends: [Send] = []
        for stream in waiting where sends.count < limit {
            guard shards[DeliveryShard.of(stream)]?.draining == false, let app = apps[stream.app] else { continue }
            guard let push = lanes[stream]?.next(at: now) else {
                if lanes[stream]?.waiting == nil { waiting.remove(stream) }
                continue
            }
            waiting.remove(stream)
            if let outcome = refusal(of: push, of: stream, app: app, at: now) {
                record(push, of: stream, outcome.0, reason: outcome.1, at: now)
                lanes[stream]?.settle()
                forgetIfDone(stream)
                continue
            }
            inFlight += 1
            sends.append(
                Send(
                    stream: stream,
                    position: push.position,
                    version: push.version,
                    request: push.request,
                    committedAt: push.committedAt,
                    credentials: app.credentials!,
                    attempt: push.attempts + 1
                )
            )
        }
        return sends
    }

    /// Why `push` must not be sent now, if it must not.
    private func refusal(
        of push: ActivityLane.Push,
        of stream: StreamID,
        app: AppDelivery,
        at now: Timestamp
    ) -> (DeliveryRecord.Outcome, String?)? {
        if app.credentials == nil { return (.noCredentials, nil) }
        if app.suspended { return (.appSuspended, "APNs refused the app's credentials; set new ones to resume") }
        if now >= push.request.expiration { return (.expired, nil) }
        if let since = invalidTokens[stream]?[push.request.deviceToken] {
            let state = states[stream]
            let registered =
                state?.activity.pushToken.flatMap(PushRenderer.normalized) == push.request.deviceToken
                ? state?.tokenRegisteredAt : nil
            if registered.map({ $0 <= since }) ?? true {
                return (.tokenInvalidated, "APNs declared the token dead at \(since)")
            }
        }
        return nil
    }

    /// APNs' answer to `send` (or its absence), `latency` after it left.
    @discardableResult
    mutating func finish(
        _ send: Send,
        response: APNsResponse,
        latency: Duration,
        at now: Timestamp,
        backoff: (Int) -> Duration
    ) -> DeliveryRecord {
        inFlight -= 1
        let verdict = APNsVerdict(response)
        var status: Int? = nil
        var reason: String? = nil
        switch response {
        case .answered(let answeredStatus, let answeredReason, _, _):
            status = answeredStatus
            reason = answeredReason
        case .unanswered(let failure):
            reason = failure
        }
        let outcome: DeliveryRecord.Outcome
        var retryAt: Timestamp? = nil
        switch verdict {
        case .delivered:
            outcome = .delivered
        case .retry:
            let time = now + backoff(send.attempt)
            if send.attempt < maximumAttempts && time < send.request.expiration {
                outcome = .retrying
                retryAt = time
            } else {
                outcome = .failed
            }
        case .invalidateToken(let since):
            outcome = .tokenInvalidated
            let since = since ?? now
            invalidTokens[send.stream, default: [:]][send.request.deviceToken] = since
            pending.invalidations.append(
                TokenInvalidation(
                    stream: send.stream,
                    deviceToken: send.request.deviceToken,
                    position: send.position,
                    status: status ?? 0,
                    reason: reason ?? "",
                    since: since
                )
            )
        case .suspendApp:
            outcome = .appSuspended
            if var app = apps[send.stream.app], !app.suspended, let updatedAt = app.credentialsUpdatedAt {
                app.suspended = true
                apps[send.stream.app] = app
                pending.suspensions.append(
                    Suspension(
                        app: send.stream.app,
                        status: status ?? 0,
                        reason: reason ?? "",
                        credentialsUpdatedAt: updatedAt
                    )
                )
            }
        case .fail:
            outcome = .failed
        }
        let finished = record(for: send, outcome, status: status, reason: reason, latency: latency, at: now)
        pending.records.append(finished)
        if let retryAt {
            if let superseded = lanes[send.stream]?.retry(at: retryAt) {
                record(superseded, of: send.stream, .superseded, at: now)
            }
        } else {
            lanes[send.stream]?.settle()
        }
        if lanes[send.stream]?.waiting != nil { waiting.insert(send.stream) }
        forgetIfDone(send.stream)
        return finished
    }

    /// When the earliest retry comes due, if one waits.
    var nextRetry: Timestamp? {
        waiting.compactMap { lanes[$0]?.waiting?.notBefore }.min()
    }

    /// How much is waiting to be recorded: outcomes, and cursors that moved.
    var unrecorded: Int {
        pending.records.count + pending.invalidations.count + pending.suspensions.count
            + cursors.filter { recordedCursors[$0.key] != $0.value }.count
    }

    /// Hands the outcomes to record over, with the cursors that moved since the last time.
    mutating func takePending() -> (Pending, cursors: [Int: Int64]) {
        defer { pending = Pending() }
        let moved = cursors.filter { recordedCursors[$0.key] != $0.value }
        recordedCursors.merge(moved) { $1 }
        return (pending, moved)
    }

    /// Outcomes that could not be recorded, to record with the next ones (and every cursor
    /// again).
    mutating func putBack(_ unrecorded: Pending) {
        recordedCursors = [:]
        pending.records.insert(contentsOf: unrecorded.records, at: 0)
        pending.invalidations.insert(contentsOf: unrecorded.invalidations, at: 0)
        pending.suspensions.insert(contentsOf: unrecorded.suspensions, at: 0)
    }

    // MARK: Helpers

    private func isMine(_ stored: StoredEvent) -> Bool {
        shards[DeliveryShard.of(stored.stream)] != nil
    }

    /// Folds one event into its stream's state; `nil` when the stream cannot be folded.
    @discardableResult
    private mutating func fold(_ stored: StoredEvent) -> DeliveryState? {
        guard unreadable[stored.stream] == nil else { return nil }
        do {
            let state = try DeliveryState(states[stored.stream], folding: stored.event, by: lifecycle)
            states[stored.stream] = state
            return state
        } catch {
            unreadable[stored.stream] = "version \(stored.event.version): \(error)"
            states[stored.stream] = nil
            return nil
        }
    }

    /// Forgets a dismissed activity once nothing of it is on its way.
    private mutating func forgetIfDone(_ stream: StreamID) {
        guard lanes[stream]?.isIdle ?? true else { return }
        lanes[stream] = nil
        waiting.remove(stream)
        if states[stream]?.activity.state == .dismissed {
            states[stream] = nil
            invalidTokens[stream] = nil
        }
    }

    private mutating func record(
        _ stored: StoredEvent,
        _ outcome: DeliveryRecord.Outcome,
        reason: String? = nil,
        at now: Timestamp
    ) {
        pending.records.append(
            DeliveryRecord(
                position: stored.position,
                stream: stored.stream,
                version: stored.event.version,
                outcome: outcome,
                reason: reason,
                attemptedAt: now
            )
        )
    }

    private mutating func record(
        _ push: ActivityLane.Push,
        of stream: StreamID,
        _ outcome: DeliveryRecord.Outcome,
        reason: String? = nil,
        at now: Timestamp
    ) {
        pending.records.append(
            DeliveryRecord(
                position: push.position,
                stream: stream,
                version: push.version,
                outcome: outcome,
                attempt: push.attempts,
                apnsID: push.request.apnsID,
                deviceToken: push.request.deviceToken,
                priority: push.request.priority,
                reason: reason,
                attemptedAt: now
            )
        )
    }

    private func record(
        for send: Send,
        _ outcome: DeliveryRecord.Outcome,
        status: Int?,
        reason: String?,
        latency: Duration,
        at now: Timestamp
    ) -> DeliveryRecord {
        DeliveryRecord(
            position: send.position,
            stream: send.stream,
            version: send.version,
            outcome: outcome,
            attempt: send.attempt,
            apnsID: send.request.apnsID,
            deviceToken: send.request.deviceToken,
            priority: send.request.priority,
            status: status,
            reason: reason,
            latency: latency,
            attemptedAt: now - latency
        )
    }
}

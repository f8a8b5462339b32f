import ActivityLifecycle
import CanonicalJSON
import EventStore

/// Everything a delivery worker knows, as a plain value: the shards it holds and how far it has
/// read each, the activities it follows (folded from the log), their lanes of pushes, and the
/// outcomes not yet recorded. Each input is a method; the worker performs the I/O around it
/// (reading the log, sending, recording), so the rules are tested without a network or a
/// database.
struct DeliveryBook {
    let renderer: PushRenderer
    let lifecycle: Lifecycle
    /// How often a push is retried at most (besides its expiration).
    let maximumAttempts: Int

    private(set) var shards = HeldShards()
    private(set) var states: [StreamID: DeliveryState] = [:]
    private(set) var lanes: [StreamID: ActivityLane] = [:]
    private(set) var waiting: Set<StreamID> = []
    private(set) var invalidTokens: [StreamID: [String: Timestamp]] = [:]
    private var settled: Set<Int64> = []
    private(set) var apps: [AppID: AppDelivery] = [:]
    private(set) var pending = Pending()
    /// Pushes on the wire.
    private(set) var inFlight = 0
    /// The cursors as last handed over to be recorded.
    private(set) var recordedCursors: [Int: Int64] = [:]
    /// Set when shards are adopted, and while a read stops short of the log's end (a full
    /// page): the log must be read again at once, whether or not anything was announced since.
    var mustRead = true
    /// Streams whose log could not be folded (corrupt), skipped; the worker logs them.
    private(set) var unreadable: [StreamID: String] = [:]

    init(renderer: PushRenderer, lifecycle: Lifecycle, maximumAttempts: Int = 20) {
        self.renderer = renderer
        self.lifecycle = lifecycle
        self.maximumAttempts = maximumAttempts
    }

    // MARK: Shards

    var heldShards: Set<Int> { shards.all }

    /// Takes shards over from their cursors; `settled` are positions after them whose delivery
    /// another worker (or this one, before a restart) already settled.
    mutating func adopt(_ cursors: [Int: Int64], settled: Set<Int64>) {
        shards.adopt(cursors)
        self.settled.formUnion(settled)
        mustRead = mustRead || !cursors.isEmpty
    }

    /// Forgets shards (a lease lost, or given up): their activities are another worker's now.
    mutating func drop(_ dropped: Set<Int>) {
        shards.drop(dropped)
        for shard in dropped { recordedCursors[shard] = nil }
        for stream in Set(states.keys).union(lanes.keys) where dropped.contains(DeliveryShard.of(stream)) {
            states[stream] = nil
            lanes[stream] = nil
            waiting.remove(stream)
            invalidTokens[stream] = nil
        }
    }

    /// Stops sending for these shards, so they can be given up once nothing is on the wire.
    mutating func drain(_ draining: Set<Int>) {
        shards.drain(draining)
    }

    // MARK: Reading the log

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
        let reads = shards.readPositions
        shards.read(upTo: last)
        for stored in events where isMine(stored) {
            guard let read = reads[DeliveryShard.of(stored.stream)], shards.delivers(stored.stream),
                stored.position > read
            else { continue }
            guard let state = fold(stored) else { continue }
            guard settled.remove(stored.position) == nil, let app = apps[stored.stream.app] else { continue }
            switch renderer.render(stored, leaving: state, topic: app.topic) {
            case .silent:
                break
            case .awaitingToken:
                record(stored, .awaitingToken, at: now)
            case .undeliverable(.payloadTooLarge(let size, let limit)):
                record(stored, .undeliverable, reason: "payload of \(size) bytes over APNs' \(limit)", at: now)
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
            guard shards.delivers(stream), let app = apps[stream.app] else { continue }
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
        let status = response.status
        var reason = response.reason
        let outcome: DeliveryRecord.Outcome
        var retryAt: Timestamp? = nil
        switch verdict {
        case .delivered:
            outcome = .delivered
        case .retry where send.request.startsActivity && status == nil:
            // APNs may have received it: a second start could start a second activity.
            outcome = .failed
            reason = (reason ?? "no answer") + "; a start is not sent again once APNs may have received it"
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
            if let deviceToken = send.request.deviceToken {
                invalidTokens[send.stream, default: [:]][deviceToken] = since
                pending.invalidations.append(
                    invalidation(
                        of: send,
                        deviceToken: deviceToken,
                        status: status ?? 0,
                        reason: reason ?? "",
                        since: since
                    )
                )
            }
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
        let finished = DeliveryRecord(
            attempt: send,
            outcome,
            status: status,
            reason: reason,
            latency: latency,
            at: now
        )
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

    /// What to record of a token APNs declared dead: an activity's push token, or the
    /// push-to-start token its remote start went to (as registered, in its device's slot).
    private func invalidation(
        of send: Send,
        deviceToken: String,
        status: Int,
        reason: String,
        since: Timestamp
    ) -> TokenInvalidation {
        var invalidation = TokenInvalidation(
            stream: send.stream,
            deviceToken: deviceToken,
            position: send.position,
            status: status,
            reason: reason,
            since: since
        )
        if send.request.startsActivity, let state = states[send.stream], let device = state.activity.deviceID,
            let pushToStartToken = state.remoteStart?.pushToStartToken
        {
            invalidation.deviceToken = pushToStartToken
            invalidation.pushToStart = PushToStartSlot(
                app: send.stream.app,
                device: device,
                activityType: state.activity.activityType
            )
        }
        return invalidation
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
        pending.records.append(DeliveryRecord(deciding: outcome, about: stored, reason: reason, at: now))
    }

    private mutating func record(
        _ push: ActivityLane.Push,
        of stream: StreamID,
        _ outcome: DeliveryRecord.Outcome,
        reason: String? = nil,
        at now: Timestamp
    ) {
        pending.records.append(DeliveryRecord(deciding: outcome, about: push, of: stream, reason: reason, at: now))
    }
}

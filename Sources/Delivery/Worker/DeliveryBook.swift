import ActivityLifecycle
import CanonicalJSON
import EventStore

/// Everything a delivery worker knows, as a plain value: the shards it holds and how far it has
/// read each, the activities it follows (folded from the log), their lanes of pushes, the pushes
/// held for a suspended app, and the outcomes not yet recorded. Each input is a method; the
/// worker performs the I/O around it (`DeliveryCycle`: reading the log, loading histories,
/// sending, recording), so the rules are tested without a network or a database — and checked
/// against a model of the whole worker (`DeliveryModelTests`).
///
/// An activity's state is folded by version: the event after version `n` is `n + 1`, and an
/// event that does not follow is never folded onto the wrong state. Before a page of the log is
/// absorbed, `histories(for:)` names the versions each stream lacks (a stream first seen in the
/// middle, a shard taken over from a lower cursor), and `install(_:)` folds them.
struct DeliveryBook {
    let renderer: PushRenderer
    let lifecycle: Lifecycle
    /// How often a push is retried at most (besides its expiration).
    let maximumAttempts: Int
    /// How long after a stream could not be folded its whole history is loaded again.
    let unreadableRetry: Duration

    var shards = HeldShards()
    var states: [StreamID: DeliveryState] = [:]
    var lanes = Lanes()
    var waiting = WaitingStreams()
    /// When the earliest push waiting for its retry time may go, as far as the book has seen
    /// (`takeReady` and `finish` keep it): the worker sleeps no longer.
    var nextRetry: Timestamp?
    var invalidTokens: [StreamID: [String: Timestamp]] = [:]
    var settled: Set<Int64> = []
    var apps: [AppID: AppDelivery] = [:]
    /// Pushes held while their app was suspended (`delivery_holds`): sent again when it resumes.
    var held: [StreamID: HeldPushes] = [:]
    /// Streams whose log could not be folded, with why and the pushes they owe.
    var unreadable: [StreamID: UnreadableStream] = [:]
    var pending = Pending()
    /// Shard changes the lease keeper decided, applied between reads.
    var shardChanges: [ShardChange] = []
    /// What the worker should log: streams that became unreadable or readable again.
    var notices: [Notice] = []
    /// Pushes on the wire.
    var inFlight = 0
    /// Starts whose `sending` record is not yet written: they go once it is (`recorded(_:)`).
    var announcing: Set<StreamID> = []
    /// Starts whose `sending` record is written, to send now.
    var announced: Set<StreamID> = []
    /// Positions after the adopted cursors whose start was under way when its worker stopped.
    var interrupted: Set<Int64> = []
    /// The cursors as last handed over to be recorded, and how far the shards were read then.
    var recordedCursors: [Int: Int64] = [:]
    var recordedReadPositions: [Int: Int64] = [:]
    /// Set when shards are adopted, and while a read stops short of the log's end (a full
    /// page): the log must be read again at once, whether or not anything was announced since.
    var mustRead = true

    init(
        renderer: PushRenderer,
        lifecycle: Lifecycle,
        maximumAttempts: Int = 20,
        unreadableRetry: Duration = .seconds(30)
    ) {
        self.renderer = renderer
        self.lifecycle = lifecycle
        self.maximumAttempts = maximumAttempts
        self.unreadableRetry = unreadableRetry
    }

    // MARK: Shards

    var heldShards: Set<Int> { shards.all }

    /// Takes shards over from their cursors; `settled` are positions after them whose delivery
    /// another worker (or this one, before a restart) already settled; `holds` the pushes held
    /// for suspended apps in any shard (those of other shards are ignored).
    mutating func adopt(
        _ cursors: [Int: Int64],
        settled: Set<Int64>,
        interrupted: Set<Int64> = [],
        holds: [Hold] = []
    ) {
        // Whatever was known of them is the past: they are read again from their cursors.
        drop(Set(cursors.keys).intersection(shards.all))
        shards.adopt(cursors)
        self.settled.formUnion(settled)
        self.interrupted.formUnion(interrupted)
        for hold in holds where cursors[DeliveryShard.of(hold.stream)] != nil {
            if let dropped = held[hold.stream, default: HeldPushes()].insert(hold) {
                pending.holds.append(.released(stream: hold.stream, position: dropped))
            }
            if hold.underWay { self.interrupted.insert(hold.position) }
        }
        mustRead = mustRead || !cursors.isEmpty
    }

    /// Forgets shards (a lease lost, or given up): their activities are another worker's now.
    mutating func drop(_ dropped: Set<Int>) {
        shards.drop(dropped)
        for shard in dropped { recordedCursors[shard] = nil }
        let streams = Set(states.keys).union(lanes.keys).union(held.keys).union(unreadable.keys)
        for stream in streams where dropped.contains(DeliveryShard.of(stream)) {
            states[stream] = nil
            lanes[stream] = nil
            waiting.remove(stream)
            announcing.remove(stream)
            announced.remove(stream)
            invalidTokens[stream] = nil
            held[stream] = nil
            unreadable[stream] = nil
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

    /// Folds and renders events read from the log, in position order, after `readPosition`:
    /// every shard being delivered has then read up to the last of them. The histories the page
    /// needs (`histories(for:)`) must be installed first; a stream whose next event does not
    /// follow its state is not folded but reported unreadable, and loaded again whole.
    mutating func absorb(_ events: [StoredEvent], at now: Timestamp) {
        guard let last = events.last?.position else { return }
        let reads = shards.readPositions
        shards.read(upTo: last)
        for stored in events where shards.delivers(stored.stream) {
            guard let read = reads[DeliveryShard.of(stored.stream)], stored.position > read else { continue }
            let alreadySettled = settled.remove(stored.position) != nil
            if unreadable[stored.stream] != nil {
                if !alreadySettled { unreadable[stored.stream]?.owed.append(stored.position) }
                continue
            }
            guard let state = fold(stored, at: now, owed: !alreadySettled) else { continue }
            if interrupted.remove(stored.position) != nil {
                failInterruptedStart(stored, at: now)
                continue
            }
            guard !alreadySettled, let app = apps[stored.stream.app] else { continue }
            deliver(stored, leaving: state, topic: app.topic, at: now)
            forgetIfDone(stored.stream)
        }
    }

    /// Renders `stored`, the newest event folded into `state`, and puts its push in its lane
    /// (or records why it sends nothing). A `resumed` push is one held for a suspended app.
    mutating func deliver(
        _ stored: StoredEvent,
        leaving state: DeliveryState,
        topic: String,
        resumed: Bool = false,
        at now: Timestamp
    ) {
        let reload = stored.event.widgetReload.flatMap { asked in
            state.activity.deviceID.map {
                ActivityReload(
                    stream: stored.stream,
                    version: stored.event.version,
                    device: $0,
                    widgetKinds: asked.widgetKinds
                )
            }
        }
        let rendered = renderer.render(stored, leaving: state, topic: topic)
        if rendered.request == nil, let reload {
            // Nothing goes to the activity: its device's reload is asked at once.
            pending.reloads.append(reload)
        }
        switch rendered {
        case .silent:
            if resumed { release(stored.stream, stored.position) }
        case .awaitingToken:
            record(stored, .awaitingToken, at: now)
            if resumed { release(stored.stream, stored.position) }
        case .undeliverable(.payloadTooLarge(let size, let limit)):
            record(stored, .undeliverable, reason: "payload of \(size) bytes over APNs' \(limit)", at: now)
            if resumed { release(stored.stream, stored.position) }
        case .undeliverable(.malformedToken):
            record(stored, .undeliverable, reason: "the push token is not hexadecimal", at: now)
            if resumed { release(stored.stream, stored.position) }
        case .push(let request):
            let push = ActivityLane.Push(
                position: stored.position,
                version: stored.event.version,
                request: request,
                // A push to the activity's own token names the event that registered it.
                tokenPosition: request.deviceToken != nil && !request.startsActivity ? state.tokenPosition : nil,
                committedAt: stored.recordedAt,
                notBefore: now,
                resumesHold: resumed,
                reload: reload,
                trace: PushTrace(of: stored)
            )
            let superseded =
                resumed
                ? lanes[stored.stream, default: ActivityLane()].offerOlder(push)
                : lanes[stored.stream, default: ActivityLane()].offer(push)
            if let superseded { record(superseded, of: stored.stream, .superseded, at: now) }
            waiting.insert(stored.stream)
        }
    }

    /// Hands the outcomes to record over, with the cursors that moved since the last time.
    mutating func takePending() -> (Pending, cursors: [Int: Int64]) {
        defer { pending = Pending() }
        let moved = cursors.filter { recordedCursors[$0.key] != $0.value }
        recordedCursors.merge(moved) { $1 }
        recordedReadPositions = shards.readPositions
        return (pending, moved)
    }

    /// Outcomes that could not be recorded, to record with the next ones (and every cursor
    /// again).
    mutating func putBack(_ unrecorded: Pending) {
        recordedCursors = [:]
        recordedReadPositions = [:]
        pending = unrecorded.followed(by: pending)
    }

    /// The notices since the last time, for the log.
    mutating func takeNotices() -> [Notice] {
        defer { notices = [] }
        return notices
    }

    // MARK: Helpers

    /// Folds one event into its stream's state; `nil` (and the stream unreadable) when it does
    /// not follow it. `owed`: the event's delivery is not settled, so it is owed once the stream
    /// can be read again.
    mutating func fold(_ stored: StoredEvent, at now: Timestamp, owed: Bool) -> DeliveryState? {
        do {
            let state = try DeliveryState(
                states[stored.stream],
                folding: stored.event,
                at: stored.position,
                by: lifecycle
            )
            states[stored.stream] = state
            return state
        } catch {
            markUnreadable(
                stored.stream,
                "version \(stored.event.version) at position \(stored.position): \(error)",
                owing: owed ? [stored.position] : [],
                at: now
            )
            return nil
        }
    }

    /// What to record of a token APNs declared dead: an activity's push token, or the
    /// push-to-start token its remote start went to (as registered, in its device's slot).
    func invalidation(
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

    /// Forgets a dismissed activity once nothing of it is on its way or held.
    mutating func forgetIfDone(_ stream: StreamID) {
        guard lanes[stream]?.isIdle ?? true else { return }
        lanes[stream] = nil
        waiting.remove(stream)
        if states[stream]?.activity.state == .dismissed && held[stream] == nil && unreadable[stream] == nil {
            states[stream] = nil
            invalidTokens[stream] = nil
        }
    }

    /// A start that was on its way when its worker stopped: APNs may have received it, so it is
    /// recorded failed (and no longer held), never sent again.
    mutating func failInterruptedStart(_ stored: StoredEvent, at now: Timestamp) {
        record(
            stored,
            .failed,
            reason: "its worker stopped while the start was on its way; a start is not sent again",
            at: now
        )
        release(stored.stream, stored.position)
    }

    mutating func record(
        _ stored: StoredEvent,
        _ outcome: DeliveryRecord.Outcome,
        reason: String? = nil,
        at now: Timestamp
    ) {
        pending.records.append(DeliveryRecord(deciding: outcome, about: stored, reason: reason, at: now))
    }

    /// Records a decision about a push that is not (or not again) sent, and what it means for a
    /// hold.
    mutating func record(
        _ push: ActivityLane.Push,
        of stream: StreamID,
        _ outcome: DeliveryRecord.Outcome,
        reason: String? = nil,
        at now: Timestamp
    ) {
        pending.records.append(DeliveryRecord(deciding: outcome, about: push, of: stream, reason: reason, at: now))
        if outcome.isFinal, let reload = push.reload { pending.reloads.append(reload) }
        settleHold(of: push, of: stream, outcome: outcome)
    }
}

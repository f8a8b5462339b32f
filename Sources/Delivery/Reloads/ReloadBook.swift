import ActivityLifecycle
import CanonicalJSON
import EventStore

/// What a reload worker keeps in memory between its turns: the shards it holds (and gives up),
/// the reloads sent and not yet recorded, how far it has read each fan-out and which of its pages
/// wait for answers, the apps it sends for, and what is to be recorded. Each input is a method
/// that changes it; the worker performs the I/O.
///
/// Nothing of a reload is written as it leaves, so this is where it is known to be on its way:
/// until its outcome is recorded, the store paces its slot behind it, and a fan-out's cursor
/// moves past a page only in the transaction that records the page's last outcome.
struct ReloadBook {
    /// A reload taken, until its outcome is recorded: where it is, and its page.
    private struct Unsettled {
        enum Stage {
            /// Decided, and waiting for room on the wire.
            case ready
            case onTheWire
            case answered
        }

        let onItsWay: ReloadOnItsWay
        let page: PageNumber?
        var stage = Stage.ready
    }

    /// A page of a fan-out, numbered in the order it was read.
    private struct PageNumber: Hashable {
        let fanout: ReloadFanout
        let number: Int
    }

    /// A fan-out this worker walks: how far it has read, and its pages waiting for answers.
    private struct Walk {
        var read: ReloadFanout.Position
        var pages: [(number: Int, through: ReloadFanout.Position, waiting: Int)] = []
        var nextNumber = 0
    }

    private(set) var held: Set<Int> = []
    private(set) var draining: Set<Int> = []
    private var unsettled: [ReloadTokenSlot: Unsettled] = [:]
    /// The reloads taken and waiting for room on the wire, in the order taken.
    private var ready: [ReadyReload] = []
    private var walks: [ReloadFanout: Walk] = [:]
    private(set) var apps: [AppID: AppDelivery] = [:]
    private var outcomes: [ReloadOutcome] = []
    private var cursors: [ReloadFanout: ReloadFanout.Position] = [:]
    private var suspensions: [Suspension] = []

    /// The shards whose reloads go out: held and not being given up.
    var sending: Set<Int> { held.subtracting(draining) }
    /// Reloads on the wire, not yet answered.
    var onTheirWay: Int { unsettled.values.count { $0.stage == .onTheWire } }
    /// Reloads taken and waiting for room on the wire.
    var readyCount: Int { ready.count }
    var unrecorded: Int { outcomes.count + cursors.count + suspensions.count }
    /// Apps whose reloads wait: no credentials, or credentials APNs refused.
    var paused: Set<AppID> { Set(apps.filter { !$0.value.resumes }.keys) }
    /// The reloads sent and not yet recorded, which pace their slots.
    var pacing: [ReloadTokenSlot: ReloadOnItsWay] { unsettled.mapValues(\.onItsWay) }
    /// How far each fan-out walked here has been read.
    var reading: [ReloadFanout: ReloadFanout.Position] { walks.mapValues(\.read) }

    mutating func adopt(_ shards: Set<Int>) {
        held.formUnion(shards)
        draining.subtract(shards)
    }

    /// Shards whose leases ran out: nothing more is sent for them, and their fan-outs' cursors
    /// are left to the worker that takes them over (it sends again what was on its way here).
    mutating func drop(_ shards: Set<Int>) {
        held.subtract(shards)
        draining.subtract(shards)
        forgetWalks(in: shards)
        for reload in ready where shards.contains(Self.shard(reload.send.slot)) {
            unsettled[reload.send.slot] = nil
        }
        ready.removeAll { shards.contains(Self.shard($0.send.slot)) }
    }

    mutating func drain(_ shards: Set<Int>) {
        draining.formUnion(shards.intersection(held))
    }

    /// Shards being given up with nothing on its way: the worker releases them once what was
    /// answered (and how far their fan-outs are done) is recorded.
    mutating func takeReleasable() -> Set<Int> {
        let busy = Set(unsettled.keys.map(Self.shard))
        let done = draining.subtracting(busy)
        held.subtract(done)
        draining.subtract(done)
        walks = walks.filter { !done.contains($0.key.shard) }
        return done
    }

    /// A page read: the fan-out is read up to its end; it waits for its sends' answers.
    /// Returns the page's number, which its sends carry.
    mutating func read(_ page: ReloadPage) -> Int {
        var walk = walks[page.fanout] ?? Walk(read: page.through)
        let number = walk.nextNumber
        walk.nextNumber += 1
        walk.read = page.through
        walk.pages.append((number, page.through, page.sends.count))
        walks[page.fanout] = walk
        settlePages(of: page.fanout)
        return number
    }

    /// What sending the app's reloads needs, as just read (`nil`: the app is gone).
    mutating func know(_ app: AppID, _ delivery: AppDelivery?) {
        apps[app] = delivery
    }

    /// Credentials changed somewhere: every app is read again before its next reload.
    mutating func forgetApps() {
        apps = [:]
    }

    /// A reload taken (page `page` of its fan-out, for one from a fan-out), to send when there is
    /// room on the wire: from now on its slot is paced behind it.
    mutating func take(_ reload: ReadyReload, page: Int?, at now: Timestamp) {
        let send = reload.send
        let sending = ReloadPacing.Sending(reload: send.reload, attempt: send.attempt)
        unsettled[send.slot] = Unsettled(
            onItsWay: ReloadOnItsWay(sending, sentAt: now),
            page: page.map { PageNumber(fanout: Self.fanout(of: send), number: $0) }
        )
        ready.append(reload)
    }

    /// The reloads to put on the wire now, at most `limit`, in the order taken.
    mutating func takeReady(limit: Int) -> [ReadyReload] {
        let taken = Array(ready.prefix(max(0, limit)))
        ready.removeFirst(taken.count)
        for reload in taken { unsettled[reload.send.slot]?.stage = .onTheWire }
        return taken
    }

    /// A reload not sent, whose app is gone: its page no longer waits for it.
    mutating func skip(_ send: ReloadSend, page: Int?) {
        done(page.map { PageNumber(fanout: Self.fanout(of: send), number: $0) })
    }

    /// A reload that waits for its app's credentials: recorded, and due again at once, which the
    /// worker leaves alone while the app is paused.
    mutating func hold(_ send: ReloadSend, page: Int?, because app: AppDelivery, at now: Timestamp) {
        outcomes.append(
            ReloadOutcome(
                send: send,
                kind: app.credentials == nil ? .noCredentials : .appSuspended,
                retryAt: now,
                attemptedAt: now
            )
        )
        done(page.map { PageNumber(fanout: Self.fanout(of: send), number: $0) })
    }

    /// APNs answered a reload (or did not): what it means, kept to be recorded. Returns the outcome.
    mutating func answered(
        _ send: ReloadSend,
        request: APNsRequest,
        response: APNsResponse,
        latency: Duration,
        at now: Timestamp,
        maximumAttempts: Int,
        backoff: (Int) -> Duration
    ) -> ReloadOutcome {
        if var sent = unsettled[send.slot], sent.onItsWay.sending.reload == send.reload, sent.stage == .onTheWire {
            sent.stage = .answered
            unsettled[send.slot] = sent
            done(sent.page)
        }
        var status: Int? = nil
        var reason: String? = nil
        var invalidSince: Timestamp? = nil
        if case .answered(let answeredStatus, let answeredReason, let since, _) = response {
            (status, reason, invalidSince) = (answeredStatus, answeredReason, since)
        } else if case .unanswered(let why) = response {
            reason = why
        }
        let kind: ReloadOutcome.Kind
        var retryAt: Timestamp? = nil
        switch APNsVerdict(reload: response) {
        case .delivered: kind = .delivered
        case .retry:
            if send.attempt < maximumAttempts {
                kind = .retrying
                retryAt = now + backoff(send.attempt)
            } else {
                kind = .failed
            }
        case .invalidateToken(let since):
            kind = .tokenInvalidated
            invalidSince = since ?? now
        case .suspendApp:
            kind = .appSuspended
            retryAt = now
            if var app = apps[send.slot.app], let credentialsUpdatedAt = app.credentialsUpdatedAt {
                if !app.suspended {
                    suspensions.append(
                        Suspension(
                            app: send.slot.app,
                            status: status ?? 0,
                            reason: reason ?? "unknown",
                            credentialsUpdatedAt: credentialsUpdatedAt
                        )
                    )
                }
                app.suspended = true
                apps[send.slot.app] = app
            }
        case .fail: kind = .failed
        }
        let outcome = ReloadOutcome(
            send: send,
            kind: kind,
            retryAt: retryAt,
            apnsID: request.apnsID,
            priority: request.priority,
            status: status,
            reason: reason,
            latency: latency,
            attemptedAt: now - latency,
            invalidSince: kind == .tokenInvalidated ? invalidSince : nil
        )
        outcomes.append(outcome)
        return outcome
    }

    /// What to record now: the outcomes, the cursors past the pages they finish, the suspensions.
    mutating func takeUnrecorded() -> Unrecorded {
        defer { (outcomes, cursors, suspensions) = ([], [:], []) }
        return Unrecorded(outcomes: outcomes, cursors: cursors, suspensions: suspensions)
    }

    /// What was taken is recorded: its reloads no longer pace their slots, and a fan-out
    /// recorded to its end is walked no more.
    mutating func recorded(_ batch: Unrecorded) {
        for outcome in batch.outcomes {
            if let sent = unsettled[outcome.send.slot], sent.stage == .answered,
                sent.onItsWay.sending
                    == ReloadPacing.Sending(reload: outcome.send.reload, attempt: outcome.send.attempt)
            {
                unsettled[outcome.send.slot] = nil
            }
        }
        for (fanout, position) in batch.cursors where position == .end {
            if let walk = walks[fanout], walk.pages.isEmpty { walks[fanout] = nil }
        }
    }

    /// Puts back what could not be recorded (the database was away), to be recorded next time;
    /// a cursor moved further since wins.
    mutating func restore(_ batch: Unrecorded) {
        outcomes = batch.outcomes + outcomes
        cursors.merge(batch.cursors) { newer, _ in newer }
        suspensions = batch.suspensions + suspensions
    }

    /// A reload of page `page` answered (or held, or skipped): the pages at the front of its
    /// fan-out that wait for nothing more move its cursor.
    private mutating func done(_ page: PageNumber?) {
        guard let page, var walk = walks[page.fanout],
            let index = walk.pages.firstIndex(where: { $0.number == page.number })
        else { return }
        walk.pages[index].waiting -= 1
        walks[page.fanout] = walk
        settlePages(of: page.fanout)
    }

    private mutating func settlePages(of fanout: ReloadFanout) {
        guard var walk = walks[fanout] else { return }
        while let first = walk.pages.first, first.waiting <= 0 {
            cursors[fanout] = first.through
            walk.pages.removeFirst()
        }
        walks[fanout] = walk
    }

    private mutating func forgetWalks(in shards: Set<Int>) {
        walks = walks.filter { !shards.contains($0.key.shard) }
        cursors = cursors.filter { !shards.contains($0.key.shard) }
    }

    static func shard(_ slot: ReloadTokenSlot) -> Int {
        DeliveryShard.of(slot.app, device: slot.device)
    }

    static func fanout(of send: ReloadSend) -> ReloadFanout {
        ReloadFanout(reload: send.reload, shard: shard(send.slot))
    }
}

/// A reload taken and ready to go: its request, and the credentials it goes with.
struct ReadyReload {
    let send: ReloadSend
    let request: APNsRequest
    let credentials: APNsCredentials
}

/// What a reload worker records in one transaction.
struct Unrecorded {
    var outcomes: [ReloadOutcome]
    var cursors: [ReloadFanout: ReloadFanout.Position]
    var suspensions: [Suspension]
}

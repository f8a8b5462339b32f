import ActivityLifecycle
import CanonicalJSON
import EventStore

/// What a reload worker keeps in memory between its turns: the shards it holds (and gives up),
/// the reloads on their way per shard, the apps it sends for, and the answers not yet recorded.
/// Each input is a method that changes it; the worker performs the I/O.
struct ReloadBook {
    private(set) var held: Set<Int> = []
    private(set) var draining: Set<Int> = []
    /// Reloads a crashed worker had on their way in shards taken over: sent again first.
    private var interrupted: [ReloadSend] = []
    private var inFlight: [Int: Int] = [:]
    private(set) var apps: [AppID: AppDelivery] = [:]
    private var outcomes: [ReloadOutcome] = []
    private var suspensions: [Suspension] = []

    /// The shards whose reloads go out: held and not being given up.
    var sending: Set<Int> { held.subtracting(draining) }
    var onTheirWay: Int { inFlight.values.reduce(0, +) }
    var unrecorded: Int { outcomes.count + suspensions.count }
    /// Apps whose reloads wait: no credentials, or credentials APNs refused.
    var paused: Set<AppID> { Set(apps.filter { !$0.value.resumes }.keys) }

    mutating func adopt(_ shards: Set<Int>, interrupted sends: [ReloadSend]) {
        held.formUnion(shards)
        draining.subtract(shards)
        interrupted += sends
    }

    /// Shards whose leases ran out: nothing more is sent for them.
    mutating func drop(_ shards: Set<Int>) {
        held.subtract(shards)
        draining.subtract(shards)
        interrupted.removeAll { shards.contains(Self.shard($0)) }
    }

    mutating func drain(_ shards: Set<Int>) {
        draining.formUnion(shards.intersection(held))
    }

    /// Shards being given up with nothing on its way: the worker releases them once what was
    /// answered is recorded.
    mutating func takeReleasable() -> Set<Int> {
        let done = draining.filter { shard in
            (inFlight[shard] ?? 0) == 0 && !interrupted.contains { Self.shard($0) == shard }
        }
        held.subtract(done)
        draining.subtract(done)
        return done
    }

    mutating func takeInterrupted(limit: Int) -> [ReloadSend] {
        let taken = Array(interrupted.filter { sending.contains(Self.shard($0)) }.prefix(limit))
        interrupted.removeAll { taken.contains($0) }
        return taken
    }

    mutating func know(_ app: AppID, _ delivery: AppDelivery) {
        apps[app] = delivery
    }

    /// Credentials changed somewhere: every app is read again before its next reload.
    mutating func forgetApps() {
        apps = [:]
    }

    mutating func sent(_ send: ReloadSend) {
        inFlight[Self.shard(send), default: 0] += 1
    }

    /// A reload that waits for its app's credentials: recorded, and due again at once, which the
    /// worker leaves alone while the app is paused.
    mutating func hold(_ send: ReloadSend, because app: AppDelivery, at now: Timestamp) {
        outcomes.append(
            ReloadOutcome(
                send: send,
                kind: app.credentials == nil ? .noCredentials : .appSuspended,
                retryAt: now,
                attemptedAt: now
            )
        )
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
        inFlight[Self.shard(send), default: 1] -= 1
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
            attemptedAt: now,
            invalidSince: kind == .tokenInvalidated ? invalidSince : nil
        )
        outcomes.append(outcome)
        return outcome
    }

    mutating func takeUnrecorded() -> (outcomes: [ReloadOutcome], suspensions: [Suspension]) {
        defer { (outcomes, suspensions) = ([], []) }
        return (outcomes, suspensions)
    }

    /// Puts back what could not be recorded (the database was away), to be recorded next time.
    mutating func restore(_ unrecorded: (outcomes: [ReloadOutcome], suspensions: [Suspension])) {
        outcomes = unrecorded.outcomes + outcomes
        suspensions = unrecorded.suspensions + suspensions
    }

    static func shard(_ send: ReloadSend) -> Int {
        DeliveryShard.of(send.slot.app, device: send.slot.device)
    }
}

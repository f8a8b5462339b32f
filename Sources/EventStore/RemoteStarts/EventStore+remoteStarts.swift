import ActivityLifecycle
public import CanonicalJSON

extension EventStore {
    /// Remote starts settled in one transaction: each one's verdict, and the events appended.
    public struct SettledStarts: Sendable {
        public let verdicts: [StartVerdict]
        /// `activity.start_unconfirmed` for each unconfirmed start, after any deadline of its
        /// activity that came due before it.
        public let appended: [StoredEvent]

        public var isEmpty: Bool { verdicts.isEmpty }
    }

    /// Settles up to `limit` remote starts whose start confirmation window ran out by `now`: a
    /// start whose activity has its push token is confirmed; one whose activity still waits for
    /// it is unconfirmed, and `activity.start_unconfirmed` is appended to its stream with how many
    /// starts to its token went unconfirmed in a row (the token is suspect from
    /// `suspectAfterUnconfirmedStarts`); one whose activity was dismissed first has no verdict.
    ///
    /// Workers settle starts one at a time (each in turn claims the oldest due), so that every
    /// run counts every start before it, and none settles a start twice; a start waits in the
    /// database, so one whose window ran out while the server was down is settled when it is back.
    public func settleDueStarts(at now: Timestamp, limit: Int) async throws -> SettledStarts {
        let lifecycle = lifecycle
        let policy = lifecycle.policy
        let settled = try await withTransaction { connection in
            try RemoteStartQueries.takeTurn(connection)
            let due = try RemoteStartQueries.claimDue(
                acceptedBy: now - policy.startConfirmationWindow,
                limit: limit,
                connection
            )
            let verdicts = due.map { start in (start, StartVerdict(of: start.stored.activity)) }
            try RemoteStartQueries.settle(verdicts, at: now, connection)
            let unconfirmed = verdicts.filter { $0.1 == .unconfirmed }.map(\.0)
            let runs = try RemoteStartQueries.unconfirmedInARow(
                through: unconfirmed.map { ($0.slot, $0.token, $0.acceptedAt) },
                connection
            )
            let appends = try zip(unconfirmed, runs).map { start, run in
                let flag = UnconfirmedStart(
                    pushToStartToken: start.token,
                    acceptedAt: start.acceptedAt,
                    tokenDueBy: start.acceptedAt + policy.startConfirmationWindow,
                    unconfirmedInARow: run,
                    tokenSuspect: run >= policy.suspectAfterUnconfirmedStarts
                )
                let before = start.stored.activity
                let events = try lifecycle.decide(.flagUnconfirmedStart(flag), for: before, at: now)
                let after = try events.reduce(before) { try lifecycle.evolve($0, with: $1) }
                return ActivityAppend(
                    events,
                    on: start.stored.stream,
                    from: before,
                    to: after,
                    lifecycle,
                    idempotency: nil
                )
            }
            return SettledStarts(
                verdicts: verdicts.map(\.1),
                appended: try Self.appendTimeDriven(appends, connection)
            )
        }
        announce(settled.appended)
        return settled
    }

    /// When the earliest start still waiting for its device's confirmation is due to be settled,
    /// or `nil` when none waits.
    public func earliestStartConfirmation() async throws -> Timestamp? {
        let window = lifecycle.policy.startConfirmationWindow
        return try await withConnection { try RemoteStartQueries.earliestWaiting($0) }.map { $0 + window }
    }
}

extension StartVerdict {
    /// The verdict on a start whose window ran out, from the activity it was to start.
    init(of activity: Activity) {
        self =
            activity.pushToken != nil ? .confirmed : activity.awaitsFirstPushToken ? .unconfirmed : .dismissed
    }
}

public import CanonicalJSON

extension Lifecycle {
    /// The next time-driven transition, or `nil` for a dismissed activity.
    ///
    /// A due time is never before the activity's last event, so a deadline that passed while
    /// something else happened (or while the server was down) is applied right after it.
    public func nextDeadline(of activity: Activity) -> Deadline? {
        let deadline: Deadline? =
            switch activity.state {
            case .pending:
                activity.startDate.map { Deadline(kind: .start, due: $0) }
            case .active:
                [lifetimeDeadline(of: activity), staleDeadline(of: activity)].compactMap { $0 }
                    // The earliest; on a tie the lifetime wins, since an ended activity cannot go stale.
                    .min { $0.due < $1.due }
            case .stale:
                lifetimeDeadline(of: activity)
            case .ended:
                activity.dismissalDate.map { Deadline(kind: .dismissal, due: $0) }
            case .dismissed:
                nil
            }
        return deadline.map { Deadline(kind: $0.kind, due: max($0.due, activity.lastEventAt)) }
    }

    /// When the deadline that a time-driven command applies is due, if the activity has one.
    func dueTime(of command: Command, for activity: Activity) -> Timestamp? {
        switch command {
        case .start where activity.state == .pending: activity.startDate
        case .markStale where activity.state == .active: activity.content.staleDate
        case .end(let end) where end.reason == .lifetimeExceeded: lifetimeDeadline(of: activity)?.due
        case .dismiss(.deadline) where activity.state == .ended: activity.dismissalDate
        case .flagUnconfirmedStart(let flag): flag.tokenDueBy
        default: nil
        }
    }

    func lifetimeDeadline(of activity: Activity) -> Deadline? {
        activity.activatedAt.map { Deadline(kind: .lifetime, due: $0 + policy.activeLifetime) }
    }

    func staleDeadline(of activity: Activity) -> Deadline? {
        activity.content.staleDate.map { Deadline(kind: .stale, due: $0) }
    }

    /// Applies every deadline due at or before `now`, each at its own due time.
    ///
    /// App and device commands run this first, so time-driven transitions are never skipped
    /// however late the deadline worker is, and events stay in time order.
    public func applyDueDeadlines(to activity: Activity, at now: Timestamp) -> (Activity, [ActivityEvent]) {
        var activity = activity
        var events: [ActivityEvent] = []
        while let deadline = nextDeadline(of: activity), deadline.due <= now {
            // nextDeadline only names transitions that apply: a failure here is a bug in the machine.
            do {
                let produced = try decideAtState(deadline.command, activity, at: deadline.due)
                activity = try produced.reduce(activity) { try evolve($0, with: $1) }
                events += produced
            } catch {
                preconditionFailure(
                    "due \(deadline.kind) deadline did not apply to a \(activity.state) activity: \(error)"
                )
            }
        }
        return (activity, events)
    }
}

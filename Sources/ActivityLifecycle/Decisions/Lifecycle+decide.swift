public import CanonicalJSON

extension Lifecycle {
    /// What `command` does to `activity` (`nil`: it does not exist yet) at `now`: the events to
    /// append, in order, or why it is refused.
    ///
    /// Deadlines due at or before `now` are applied first, each at its own due time, and
    /// transitions that the command makes due at once follow it (an update whose stale date has
    /// passed lands in `stale`; an immediate dismissal follows its end), so the events always
    /// tell the whole story in time order. A `now` before the activity's last event counts as the
    /// time of that event.
    ///
    /// - Parameter context: the app's rules and, for requests, the open counts.
    public func decide(
        _ command: Command,
        for activity: Activity?,
        at now: Timestamp,
        context: DecisionContext
    ) throws(Rejection) -> [ActivityEvent] {
        // Events never go back in time: a command decided with a clock reading older than the
        // activity's last event (it raced another command, which committed first) is applied at
        // that event's time.
        let now = max(now, activity?.lastEventAt ?? now)
        let before: Activity?
        var events: [ActivityEvent]
        let produced: [ActivityEvent]
        if case .request(let request) = command {
            guard activity == nil else { throw .activityExists }
            before = nil
            events = []
            produced = [try requested(request, at: now, context: context)]
        } else if command.cause == .system {
            // Time-driven commands are the deadlines themselves: applied at their due time, after
            // any deadline that came due strictly before it.
            guard let activity else { throw .activityNotFound }
            let due = dueTime(of: command, for: activity).flatMap { $0 <= now ? max($0, activity.lastEventAt) : nil }
            let time = due ?? now
            (before, events) = applyDueDeadlines(to: activity, at: time - .microseconds(1))
            produced = try decideAtState(command, before!, at: max(time, before!.lastEventAt), rules: context.app)
        } else {
            guard let activity else { throw .activityNotFound }
            (before, events) = applyDueDeadlines(to: activity, at: now)
            produced = try decideAtState(command, before!, at: now, rules: context.app)
        }
        guard !produced.isEmpty else { return events }
        events += produced
        let after = try! produced.reduce(before) { try evolve($0, with: $1) }!
        return events + applyDueDeadlines(to: after, at: now).1
    }

    /// `decide` for a time-driven command (`command.cause` is `system`), which no app rule or
    /// open count bears on.
    public func decide(
        _ command: Command,
        for activity: Activity,
        at now: Timestamp
    ) throws(Rejection) -> [ActivityEvent] {
        precondition(command.cause == .system, "\(command.name) is not time-driven")
        let context = DecisionContext(
            app: AppRules(defaultsOf: policy),
            globalMaxOpen: policy.defaultGlobalMaxOpen,
            open: OpenCounts(app: 0, global: 0)
        )
        return try decide(command, for: activity, at: now, context: context)
    }

    /// `decide` for an existing activity whose deadlines are already applied.
    func decideAtState(
        _ command: Command,
        _ activity: Activity,
        at now: Timestamp,
        rules: AppRules? = nil
    ) throws(Rejection) -> [ActivityEvent] {
        let payload: EventPayload? =
            switch command {
            case .request: throw .activityExists
            case .start: try start(activity, at: now)
            case .update(let update):
                try updated(activity, update, at: now, rules: rules ?? AppRules(defaultsOf: policy))
            case .markStale: try markStale(activity, at: now)
            case .end(let end): try ended(activity, end, at: now)
            case .dismiss(let trigger): try dismissed(activity, trigger, at: now)
            case .registerPushToken(let token): try pushTokenChanged(activity, token)
            case .flagUnconfirmedStart(let flag): try startUnconfirmed(activity, flag, at: now)
            }
        guard let payload else { return [] }
        return [ActivityEvent(version: activity.version + 1, occurredAt: now, cause: command.cause, payload: payload)]
    }

    // MARK: Commands

    private func requested(
        _ request: Command.Request,
        at now: Timestamp,
        context: DecisionContext
    ) throws(Rejection) -> ActivityEvent {
        try checkLead(request.timestamp, at: now)
        try checkSize(attributes: request.attributes, content: request.content)
        if let remoteStart = request.remoteStart {
            guard remoteStart.pushToStartToken != nil else {
                throw .pushToStartTokenMissing(deviceID: request.deviceID, activityType: request.activityType)
            }
            try checkPushToStartBudget(request.deviceID, at: now, context: context)
        }
        if let channel = request.channel, channel.storagePolicy == nil {
            throw .channelNotFound(channelID: channel.id)
        }
        let open = context.open
        guard open.app < context.app.maxOpen else {
            throw .targetMaximumExceeded(limit: context.app.maxOpen, count: open.app)
        }
        guard open.global < context.globalMaxOpen else {
            throw .globalMaximumExceeded(limit: context.globalMaxOpen, count: open.global)
        }
        if let device = request.deviceID, let limit = context.app.maxOpenPerDevice, open.device >= limit {
            throw .deviceMaximumExceeded(deviceID: device, limit: limit, count: open.device)
        }
        return ActivityEvent(version: 1, occurredAt: now, cause: .app, payload: .requested(.init(request)))
    }

    private func start(_ activity: Activity, at now: Timestamp) throws(Rejection) -> EventPayload {
        guard activity.state == .pending else { throw .invalidTransition(command: "start", state: activity.state) }
        guard let startDate = activity.startDate, startDate <= now else {
            throw .notDue(command: "start", dueAt: activity.startDate)
        }
        return .started
    }

    private func updated(
        _ activity: Activity,
        _ update: Command.Update,
        at now: Timestamp,
        rules: AppRules
    ) throws(Rejection) -> EventPayload {
        guard activity.state.isOpen else { throw .activityEnded(state: activity.state) }
        try checkLead(update.timestamp, at: now)
        if let timestamp = update.timestamp, let last = activity.lastTimestamp, timestamp <= last {
            throw .outdatedUpdate(timestamp: timestamp, lastTimestamp: last)
        }
        try checkSize(attributes: activity.attributes, content: update.content)
        try checkWidgetReload(update.widgetReload, of: activity)

        var priority = update.priority ?? .high
        var downgraded = false
        if priority == .high {
            let budget = rules.updateBudget(under: policy)
            let windowStart = now - LifecyclePolicy.budgetWindow
            let inWindow = activity.recentHighPriorityUpdates.filter { $0 > windowStart }
            if inWindow.count >= budget {
                guard update.priority == nil else {
                    let retryAt = (inWindow.first ?? now) + LifecyclePolicy.budgetWindow
                    throw .pushBudgetExhausted(budget: budget, retryAfter: retryAt - now)
                }
                priority = .low
                downgraded = true
            }
        }
        return .updated(
            .init(
                content: update.content,
                alert: update.alert,
                priority: priority,
                downgraded: downgraded,
                timestamp: update.timestamp,
                widgetReload: update.widgetReload
            )
        )
    }

    private func markStale(_ activity: Activity, at now: Timestamp) throws(Rejection) -> EventPayload? {
        guard activity.state == .active else { return nil }
        guard let staleDate = activity.content.staleDate, staleDate <= now else {
            throw .notDue(command: "mark stale", dueAt: activity.content.staleDate)
        }
        return .becameStale
    }

    private func ended(_ activity: Activity, _ end: Command.End, at now: Timestamp) throws(Rejection) -> EventPayload {
        guard activity.state.isOpen else { throw .activityEnded(state: activity.state) }
        switch end.reason {
        case .app:
            // An end tolerates an older timestamp, but not one from the far future.
            try checkLead(end.timestamp, at: now)
            if let content = end.content {
                try checkSize(attributes: activity.attributes, content: content)
            }
            try checkWidgetReload(end.widgetReload, of: activity)
        case .lifetimeExceeded:
            guard activity.state != .pending else {
                throw .invalidTransition(command: "end (lifetime)", state: activity.state)
            }
            guard let deadline = lifetimeDeadline(of: activity), deadline.due <= now else {
                throw .notDue(command: "end (lifetime)", dueAt: lifetimeDeadline(of: activity)?.due)
            }
        }
        return .ended(
            .init(
                reason: end.reason,
                content: end.content,
                dismissalPolicy: end.dismissal.name,
                dismissalDate: dismissalDate(for: end.dismissal, of: activity, endingAt: now),
                timestamp: end.timestamp,
                widgetReload: end.widgetReload
            )
        )
    }

    /// Rule 3: `immediate` (or a date not after the end, or a pending activity) is now; `default`
    /// is the end plus the dismissal window; `after(date)` is clamped into that window.
    private func dismissalDate(for policy: DismissalPolicy, of activity: Activity, endingAt now: Timestamp) -> Timestamp
    {
        let latest = now + self.policy.dismissalWindow
        guard activity.state != .pending else { return now }
        switch policy {
        case .immediate: return now
        case .default: return latest
        case .after(let date): return date <= now ? now : min(date, latest)
        }
    }

    private func dismissed(
        _ activity: Activity,
        _ trigger: DismissalTrigger,
        at now: Timestamp
    ) throws(Rejection) -> EventPayload {
        guard activity.state != .dismissed else { throw .activityDismissed }
        switch trigger {
        case .userRemoved:
            return .dismissed(.init(reason: .userRemoved))
        case .deadline:
            guard activity.state == .ended, let dismissalDate = activity.dismissalDate else {
                throw .invalidTransition(command: "dismiss at the deadline", state: activity.state)
            }
            guard dismissalDate <= now else { throw .notDue(command: "dismiss", dueAt: dismissalDate) }
            return .dismissed(.init(reason: dismissalDate == activity.endedAt ? .immediate : .deadline))
        }
    }

    private func pushTokenChanged(_ activity: Activity, _ token: String) throws(Rejection) -> EventPayload? {
        guard activity.acceptsPushToken else { throw .activityEnded(state: activity.state) }
        guard token != activity.pushToken else { return nil }
        return .pushTokenChanged(.init(pushToken: token))
    }

    /// A start can be unconfirmed only once the window ran out, while the activity it was to
    /// start could still take its first push token (open, or ended without one; an activity on a
    /// channel never has one to wait for).
    private func startUnconfirmed(
        _ activity: Activity,
        _ flag: UnconfirmedStart,
        at now: Timestamp
    ) throws(Rejection) -> EventPayload {
        guard activity.awaitsFirstPushToken else {
            throw .invalidTransition(command: "flag unconfirmed start", state: activity.state)
        }
        guard flag.tokenDueBy <= now else { throw .notDue(command: "flag unconfirmed start", dueAt: flag.tokenDueBy) }
        return .startUnconfirmed(flag)
    }

    // MARK: Checks

    /// A widget reload goes to the activity's device, which it must name.
    private func checkWidgetReload(_ reload: WidgetReload?, of activity: Activity) throws(Rejection) {
        guard reload != nil, activity.deviceID == nil else { return }
        throw .widgetReloadWithoutDevice
    }

    /// A device takes at most the app's push-to-start budget of remote starts in any rolling
    /// hour; the next one may come when the oldest of those leaves the hour.
    private func checkPushToStartBudget(
        _ device: DeviceID?,
        at now: Timestamp,
        context: DecisionContext
    ) throws(Rejection) {
        let budget = max(context.app.pushToStartBudgetPerHour, 1)
        let recent = context.remoteStarts.filter { $0 > now - LifecyclePolicy.budgetWindow }.sorted()
        guard recent.count >= budget else { return }
        let frees = recent[recent.count - budget] + LifecyclePolicy.budgetWindow
        throw .pushToStartBudgetExhausted(deviceID: device, budget: budget, retryAfter: frees - now)
    }

    /// Rule 6: a timestamp more than the allowed lead ahead of the server's clock is refused.
    private func checkLead(_ timestamp: Timestamp?, at now: Timestamp) throws(Rejection) {
        let latest = now + policy.maximumTimestampLead
        if let timestamp, timestamp > latest {
            throw .invalidTimestamp(timestamp: timestamp, latestAccepted: latest)
        }
    }

    /// Rule 1: encoded `attributes` + `contentState` within the payload limit.
    private func checkSize(attributes: JSONObject, content: ActivityContent) throws(Rejection) {
        let size = attributes.encodedSize + content.contentState.encodedSize
        guard size <= policy.maximumPayloadSize else {
            throw .dataTooLarge(size: size, limit: policy.maximumPayloadSize)
        }
    }
}

extension DismissalPolicy {
    var name: DismissalPolicyName {
        switch self {
        case .immediate: .immediate
        case .default: .default
        case .after: .after
        }
    }
}

import CanonicalJSON

/// Why an event cannot follow the state it was folded onto: the machine would never have
/// produced it.
public struct IllegalEvent: Error, Hashable, Sendable, CustomStringConvertible {
    public let reason: String

    init(_ reason: String) {
        self.reason = reason
    }

    public var description: String { reason }
}

extension Lifecycle {
    /// Folds one event into the state, re-checking that the machine could have produced it
    /// (SPEC rule 10): contiguous version, time order, a legal transition, the payload limit,
    /// the ordering of timestamps, and the rules of each event type.
    public func evolve(_ activity: Activity?, with event: ActivityEvent) throws(IllegalEvent) -> Activity {
        guard var activity else {
            return try created(by: event)
        }
        guard event.version == activity.version + 1 else {
            throw IllegalEvent("version \(event.version) follows version \(activity.version)")
        }
        guard event.occurredAt >= activity.lastEventAt else {
            throw IllegalEvent("occurred at \(event.occurredAt), before the previous event (\(activity.lastEventAt))")
        }
        let state = activity.state
        let now = event.occurredAt
        switch event.payload {
        case .requested:
            throw IllegalEvent("activity.requested for an activity that exists")

        case .started:
            try require(state == .pending, "activity.started while \(state.rawValue)")
            try require(activity.startDate.map { $0 <= now } ?? false, "activity.started before its start date")
            activity.state = .active
            activity.activatedAt = now

        case .updated(let updated):
            try require(state.isOpen, "activity.updated while \(state.rawValue)")
            try requireSize(activity.attributes, updated.content)
            if let timestamp = updated.timestamp, let last = activity.lastTimestamp {
                try require(timestamp > last, "update timestamp \(timestamp) not after \(last)")
            }
            try require(!updated.downgraded || updated.priority == .low, "downgraded update not at priority 5")
            activity.content = updated.content
            activity.lastTimestamp = updated.timestamp ?? activity.lastTimestamp
            if updated.priority == .high {
                let windowStart = now - LifecyclePolicy.budgetWindow
                activity.recentHighPriorityUpdates.removeAll { $0 <= windowStart }
                activity.recentHighPriorityUpdates.append(now)
            }
            if state == .stale {
                activity.state = .active
            }

        case .becameStale:
            try require(state == .active, "activity.became_stale while \(state.rawValue)")
            try require(
                activity.content.staleDate.map { $0 <= now } ?? false,
                "activity.became_stale before its stale date"
            )
            activity.state = .stale

        case .ended(let ended):
            try require(state.isOpen, "activity.ended while \(state.rawValue)")
            if let content = ended.content {
                try requireSize(activity.attributes, content)
            }
            if ended.reason == .lifetimeExceeded {
                try require(state != .pending, "lifetime end of a pending activity")
                try require(
                    activity.activatedAt.map { $0 + policy.activeLifetime <= now } ?? false,
                    "lifetime end before the lifetime ran out"
                )
            }
            try require(
                ended.dismissalDate >= now && ended.dismissalDate <= now + policy.dismissalWindow,
                "dismissal date \(ended.dismissalDate) outside [end, end + \(policy.dismissalWindow)]"
            )
            try require(
                state != .pending || ended.dismissalDate == now,
                "pending activity ended without immediate dismissal"
            )
            activity.state = .ended
            activity.content = ended.content ?? activity.content
            activity.endedAt = now
            activity.endReason = ended.reason
            activity.dismissalDate = ended.dismissalDate
            if let timestamp = ended.timestamp {
                activity.lastTimestamp = max(activity.lastTimestamp ?? timestamp, timestamp)
            }

        case .dismissed(let dismissed):
            try require(state != .dismissed, "activity.dismissed twice")
            switch dismissed.reason {
            case .userRemoved:
                try require(event.cause == .device, "user removal not reported by the device")
            case .deadline, .immediate:
                try require(state == .ended, "dismissal by deadline while \(state.rawValue)")
                try require(
                    activity.dismissalDate.map { $0 <= now } ?? false,
                    "dismissed before the dismissal date"
                )
                try require(
                    (dismissed.reason == .immediate) == (activity.dismissalDate == activity.endedAt),
                    "dismissal reason \(dismissed.reason.rawValue) does not match the dismissal date"
                )
            }
            activity.state = .dismissed
            activity.dismissedAt = now

        case .pushTokenChanged(let changed):
            try require(activity.acceptsPushToken, "activity.push_token_changed while \(state.rawValue)")
            activity.pushToken = changed.pushToken

        case .startUnconfirmed(let flag):
            try require(event.cause == .system, "activity.start_unconfirmed not recorded by the system")
            try require(
                activity.awaitsFirstPushToken,
                "activity.start_unconfirmed while \(state.rawValue)"
                    + (activity.pushToken == nil ? "" : " with a push token")
                    + (activity.pushType == .channel ? " on a channel" : "")
            )
            try require(
                flag.acceptedAt < flag.tokenDueBy && flag.tokenDueBy <= now,
                "activity.start_unconfirmed before its window ran out"
            )
            try require(flag.unconfirmedInARow >= 1, "activity.start_unconfirmed counts no start")
        }
        activity.version = event.version
        activity.lastEventAt = now
        return activity
    }

    private func created(by event: ActivityEvent) throws(IllegalEvent) -> Activity {
        guard case .requested(let requested) = event.payload else {
            throw IllegalEvent("the stream begins with \(event.type.rawValue), not activity.requested")
        }
        guard event.version == 1 else {
            throw IllegalEvent("the stream begins at version \(event.version), not 1")
        }
        try requireSize(requested.attributes, requested.content)
        let isScheduled = requested.startDate.map { $0 > event.occurredAt } ?? false
        return Activity(
            state: isScheduled ? .pending : .active,
            version: 1,
            activityType: requested.activityType,
            attributes: requested.attributes,
            content: requested.content,
            startDate: requested.startDate,
            pushType: requested.pushType,
            style: requested.style,
            deviceID: requested.deviceID,
            pushToken: nil,
            requestedAt: event.occurredAt,
            activatedAt: isScheduled ? nil : event.occurredAt,
            endedAt: nil,
            endReason: nil,
            dismissedAt: nil,
            dismissalDate: nil,
            lastTimestamp: requested.timestamp,
            lastEventAt: event.occurredAt,
            recentHighPriorityUpdates: []
        )
    }

    private func require(_ condition: Bool, _ reason: @autoclosure () -> String) throws(IllegalEvent) {
        guard condition else { throw IllegalEvent(reason()) }
    }

    private func requireSize(_ attributes: JSONObject, _ content: ActivityContent) throws(IllegalEvent) {
        let size = attributes.encodedSize + content.contentState.encodedSize
        try require(
            size <= policy.maximumPayloadSize,
            "payload of \(size) bytes over the \(policy.maximumPayloadSize)-byte limit"
        )
    }
}

import ActivityLifecycle
import CanonicalJSON
import EventStore

/// Pushes held for a suspended app. While APNs refuses an app's credentials, its pushes are
/// recorded `app_suspended` and held (a row of `delivery_holds` each, written with the outcome);
/// when new credentials resume the app, each held activity's history is loaded again and its
/// held pushes are offered once more, before anything newer (`offerOlder`): a held remote start
/// first, then the newest held push — unless newer content came meanwhile, which supersedes it.
extension DeliveryBook {
    /// Suspends the app's deliveries: APNs refused its credentials (or topic).
    mutating func suspend(_ app: AppID, status: Int, reason: String) {
        guard var delivery = apps[app], !delivery.suspended, let updatedAt = delivery.credentialsUpdatedAt else {
            return
        }
        delivery.suspended = true
        apps[app] = delivery
        pending.suspensions.append(
            Suspension(app: app, status: status, reason: reason, credentialsUpdatedAt: updatedAt)
        )
    }

    /// Every app's reading is out of date: credentials were set somewhere (another process,
    /// the command line), so each app is read again before its next push.
    mutating func credentialsChanged() {
        for app in apps.keys { apps[app]?.readAt = Timestamp(microsecondsSince1970: 0) }
    }

    /// What a push's settling means for its hold: refused for the app's credentials, it is held
    /// (replacing an older held push of its activity); otherwise, settled for good, a held push
    /// that was offered again is no longer held.
    mutating func settleHold(of push: ActivityLane.Push, of stream: StreamID, outcome: DeliveryRecord.Outcome) {
        if outcome == .appSuspended {
            let hold = Hold(stream: stream, position: push.position, startsActivity: push.request.startsActivity)
            let dropped = held[stream, default: HeldPushes()].insert(hold)
            if dropped != hold.position { pending.holds.append(.held(hold)) }
            if let dropped { pending.holds.append(.released(stream: stream, position: dropped)) }
        } else if outcome.isFinal && push.resumesHold {
            release(stream, push.position)
        }
    }

    /// The push at `position` is no longer held.
    mutating func release(_ stream: StreamID, _ position: Int64) {
        guard var pushes = held[stream], pushes.remove(position) else { return }
        held[stream] = pushes.isEmpty ? nil : pushes
        pending.holds.append(.released(stream: stream, position: position))
    }

    /// Offers the held pushes of a stream whose app resumed, now that its history is loaded
    /// (`events`, folded into `state`).
    mutating func resume(
        _ stream: StreamID,
        from events: [StoredEvent],
        leaving state: DeliveryState,
        at now: Timestamp
    ) {
        guard var pushes = held[stream], !pushes.offered, let app = apps[stream.app], app.resumes else { return }
        pushes.offered = true
        held[stream] = pushes
        for position in pushes.positions {
            guard let stored = events.first(where: { $0.position == position }) else {
                release(stream, position)
                continue
            }
            if interrupted.remove(position) != nil {
                failInterruptedStart(stored, at: now)
                continue
            }
            deliver(stored, leaving: state, topic: app.topic, resumed: true, at: now)
        }
    }
}

/// A change to `delivery_holds`, recorded with the outcome that caused it.
enum HoldChange: Hashable, Sendable {
    case held(Hold)
    case released(stream: StreamID, position: Int64)

    var key: HoldKey {
        switch self {
        case .held(let hold): HoldKey(stream: hold.stream, position: hold.position)
        case .released(let stream, let position): HoldKey(stream: stream, position: position)
        }
    }
}

/// The held pushes of one activity: its remote start, when that was held (nothing replaces a
/// start), and its newest other push (newer content replaces older).
struct HeldPushes: Hashable, Sendable {
    private(set) var start: Int64?
    private(set) var newest: Int64?
    /// Offered again since the app resumed (and not held again since).
    var offered = false

    /// Holds `hold`; returns a position no longer held: the older of two pushes that are not
    /// starts (`hold`'s own when it is the older).
    mutating func insert(_ hold: Hold) -> Int64? {
        offered = false
        if hold.startsActivity {
            start = hold.position
            return nil
        }
        guard let current = newest, current != hold.position else {
            newest = hold.position
            return nil
        }
        newest = max(current, hold.position)
        return min(current, hold.position)
    }

    /// Removes the push at `position`; `false` when it was not held.
    mutating func remove(_ position: Int64) -> Bool {
        if start == position {
            start = nil
            return true
        }
        if newest == position {
            newest = nil
            return true
        }
        return false
    }

    var isEmpty: Bool { start == nil && newest == nil }

    /// In the order they go: the start first.
    var positions: [Int64] { [start, newest].compactMap { $0 } }
}

public import CanonicalJSON

/// Why a command was refused: a stable code for machines and what a person needs to act.
public enum Rejection: Error, Hashable, Sendable, CustomStringConvertible {
    /// No activity with that id (or not the caller's).
    case activityNotFound
    /// A request named an id that already exists.
    case activityExists
    /// Encoded `attributes` + `contentState` over the limit.
    case dataTooLarge(size: Int, limit: Int)
    /// The activity has ended (or been dismissed): it takes no more updates, ends or tokens.
    case activityEnded(state: ActivityState)
    /// The activity has been dismissed already.
    case activityDismissed
    /// The update's timestamp is not later than the last applied one.
    case outdatedUpdate(timestamp: Timestamp, lastTimestamp: Timestamp)
    /// The timestamp is too far ahead of the server's clock.
    case invalidTimestamp(timestamp: Timestamp, latestAccepted: Timestamp)
    /// The app's cap on open activities is reached.
    case targetMaximumExceeded(limit: Int, count: Int)
    /// The service-wide cap on open activities is reached.
    case globalMaximumExceeded(limit: Int, count: Int)
    /// The device's cap on open activities is reached.
    case deviceMaximumExceeded(deviceID: DeviceID, limit: Int, count: Int)
    /// The activity's priority-10 updates for this hour are spent; retry after `retryAfter`.
    case pushBudgetExhausted(budget: Int, retryAfter: Duration)
    /// The command does not apply to the activity's state (for example `start` when not pending).
    case invalidTransition(command: String, state: ActivityState)
    /// A time-driven command before its time.
    case notDue(command: String, dueAt: Timestamp?)
    /// A remote start for a device that has no push-to-start token for the activity type.
    case pushToStartTokenMissing(deviceID: DeviceID?, activityType: String)
    /// The device's remote starts for this hour are spent; retry after `retryAfter`.
    case pushToStartBudgetExhausted(deviceID: DeviceID?, budget: Int, retryAfter: Duration)
    /// A request on a channel the app does not have (never created, or deleted).
    case channelNotFound(channelID: String)
    /// An update or end asked for a widget reload of an activity that names no device.
    case widgetReloadWithoutDevice

    /// The stable machine-readable code.
    public var code: String {
        switch self {
        case .activityNotFound: "activity_not_found"
        case .activityExists: "activity_exists"
        case .dataTooLarge: "data_too_large"
        case .activityEnded: "activity_ended"
        case .activityDismissed: "activity_dismissed"
        case .outdatedUpdate: "outdated_update"
        case .invalidTimestamp: "invalid_timestamp"
        case .targetMaximumExceeded: "target_maximum_exceeded"
        case .globalMaximumExceeded: "global_maximum_exceeded"
        case .deviceMaximumExceeded: "device_maximum_exceeded"
        case .pushBudgetExhausted: "push_budget_exhausted"
        case .invalidTransition: "invalid_transition"
        case .notDue: "not_due"
        case .pushToStartTokenMissing: "push_to_start_token_missing"
        case .pushToStartBudgetExhausted: "push_to_start_budget_exhausted"
        case .channelNotFound: "channel_not_found"
        case .widgetReloadWithoutDevice: "widget_reload_without_device"
        }
    }

    /// What happened and what to do about it.
    public var description: String {
        switch self {
        case .activityNotFound:
            "No such activity."
        case .activityExists:
            "An activity with this id already exists; choose another id or omit it to get a generated one."
        case .dataTooLarge(let size, let limit):
            "attributes and contentState encode to \(size) bytes; the limit is \(limit) bytes."
        case .activityEnded(let state):
            "The activity is \(state.rawValue); it accepts no more updates. Request a new activity."
        case .activityDismissed:
            "The activity has already been dismissed."
        case .outdatedUpdate(let timestamp, let lastTimestamp):
            "The update's timestamp \(timestamp) is not later than the last applied one, \(lastTimestamp)."
        case .invalidTimestamp(let timestamp, let latestAccepted):
            "The timestamp \(timestamp) is too far in the future; the latest accepted now is \(latestAccepted)."
        case .targetMaximumExceeded(let limit, let count):
            "The app has \(count) open activities; its cap is \(limit). End one first."
        case .globalMaximumExceeded(let limit, let count):
            "The service has \(count) open activities; its cap is \(limit)."
        case .deviceMaximumExceeded(let deviceID, let limit, let count):
            "Device \(deviceID) has \(count) open activities; the app's per-device cap is \(limit)."
        case .pushBudgetExhausted(let budget, let retryAfter):
            "The activity sent its \(budget) priority-10 updates for this hour; retry in \(retryAfter.wholeSecondsRoundedUp) s, "
                + "or send at priority 5."
        case .invalidTransition(let command, let state):
            "Cannot \(command) an activity that is \(state.rawValue)."
        case .notDue(let command, let dueAt):
            "Too early to \(command)" + (dueAt.map { ": due at \($0)." } ?? ": nothing is due.")
        case .pushToStartTokenMissing(let deviceID, let activityType):
            "Device \(deviceID?.rawValue ?? "(none)") has no push-to-start token for \(activityType): register the token "
                + "ActivityKit gave the app (PUT /v1/devices/{deviceId}/push-to-start-tokens/{activityType}) first."
        case .pushToStartBudgetExhausted(let deviceID, let budget, let retryAfter):
            "Device \(deviceID?.rawValue ?? "(none)") was sent its \(budget) remote starts for this hour; retry in "
                + "\(retryAfter.wholeSecondsRoundedUp) s, or have the app start the activity itself."
        case .channelNotFound(let channelID):
            "The app has no channel \(channelID): create one (POST /v1/admin/apps/{appId}/channels) and use the id "
                + "APNs gave it."
        case .widgetReloadWithoutDevice:
            "The activity names no device, so there are no widgets to reload: request activities with their deviceId "
                + "to have their updates reload the device's widgets, or reload them with POST /v1/reloads."
        }
    }
}

extension Duration {
    /// Whole seconds, rounded up: for `Retry-After`.
    public var wholeSecondsRoundedUp: Int64 {
        let micros = microseconds
        return micros <= 0 ? 0 : (micros + 999_999) / 1_000_000
    }
}

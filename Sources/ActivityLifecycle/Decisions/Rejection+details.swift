public import CanonicalJSON

extension Rejection {
    /// What a person needs to act on the rejection, as JSON: limits, counts, sizes, times.
    /// Stored with rejections and idempotency outcomes, and shown in problem responses.
    public var details: [String: JSONValue] {
        switch self {
        case .activityNotFound, .activityExists, .activityDismissed, .widgetReloadWithoutDevice:
            [:]
        case .dataTooLarge(let size, let limit):
            ["size": .number(JSONNumber(size)), "limit": .number(JSONNumber(limit))]
        case .activityEnded(let state):
            ["state": .string(state.rawValue)]
        case .outdatedUpdate(let timestamp, let lastTimestamp):
            ["timestamp": .string(timestamp.description), "lastTimestamp": .string(lastTimestamp.description)]
        case .invalidTimestamp(let timestamp, let latestAccepted):
            ["timestamp": .string(timestamp.description), "latestAccepted": .string(latestAccepted.description)]
        case .targetMaximumExceeded(let limit, let count), .globalMaximumExceeded(let limit, let count):
            ["limit": .number(JSONNumber(limit)), "count": .number(JSONNumber(count))]
        case .deviceMaximumExceeded(let deviceID, let limit, let count):
            [
                "deviceId": .string(deviceID.rawValue), "limit": .number(JSONNumber(limit)),
                "count": .number(JSONNumber(count)),
            ]
        case .pushBudgetExhausted(let budget, let retryAfter):
            [
                "budget": .number(JSONNumber(budget)),
                "retryAfterSeconds": .number(JSONNumber(retryAfter.wholeSecondsRoundedUp)),
            ]
        case .invalidTransition(let command, let state):
            ["command": .string(command), "state": .string(state.rawValue)]
        case .notDue(let command, let dueAt):
            ["command": .string(command)].merging(dueAt.map { ["dueAt": .string($0.description)] } ?? [:]) { $1 }
        case .pushToStartBudgetExhausted(let deviceID, let budget, let retryAfter):
            [
                "budget": .number(JSONNumber(budget)),
                "retryAfterSeconds": .number(JSONNumber(retryAfter.wholeSecondsRoundedUp)),
            ].merging(deviceID.map { ["deviceId": .string($0.rawValue)] } ?? [:]) { $1 }
        case .channelNotFound(let channelID):
            ["channelId": .string(channelID)]
        case .pushToStartTokenMissing(let deviceID, let activityType):
            ["activityType": .string(activityType)].merging(deviceID.map { ["deviceId": .string($0.rawValue)] } ?? [:])
            {
                $1
            }
        }
    }

    /// The rejection that `code` and `details` describe, or `nil` when they describe none.
    public init?(code: String, details: [String: JSONValue]) {
        func int(_ key: String) -> Int? {
            if case .number(let value) = details[key], let exact = value.integer { Int(exactly: exact) } else { nil }
        }
        func string(_ key: String) -> String? {
            if case .string(let value) = details[key] { value } else { nil }
        }
        func instant(_ key: String) -> Timestamp? { string(key).flatMap(RFC3339.parse) }
        switch code {
        case "activity_not_found": self = .activityNotFound
        case "activity_exists": self = .activityExists
        case "activity_dismissed": self = .activityDismissed
        case "widget_reload_without_device": self = .widgetReloadWithoutDevice
        case "data_too_large":
            guard let size = int("size"), let limit = int("limit") else { return nil }
            self = .dataTooLarge(size: size, limit: limit)
        case "activity_ended":
            guard let state = string("state").flatMap(ActivityState.init(rawValue:)) else { return nil }
            self = .activityEnded(state: state)
        case "outdated_update":
            guard let timestamp = instant("timestamp"), let last = instant("lastTimestamp") else { return nil }
            self = .outdatedUpdate(timestamp: timestamp, lastTimestamp: last)
        case "invalid_timestamp":
            guard let timestamp = instant("timestamp"), let latest = instant("latestAccepted") else { return nil }
            self = .invalidTimestamp(timestamp: timestamp, latestAccepted: latest)
        case "target_maximum_exceeded":
            guard let limit = int("limit"), let count = int("count") else { return nil }
            self = .targetMaximumExceeded(limit: limit, count: count)
        case "global_maximum_exceeded":
            guard let limit = int("limit"), let count = int("count") else { return nil }
            self = .globalMaximumExceeded(limit: limit, count: count)
        case "device_maximum_exceeded":
            guard let device = string("deviceId").flatMap(DeviceID.init(rawValue:)), let limit = int("limit"),
                let count = int("count")
            else { return nil }
            self = .deviceMaximumExceeded(deviceID: device, limit: limit, count: count)
        case "push_budget_exhausted":
            guard let budget = int("budget"), let seconds = int("retryAfterSeconds") else { return nil }
            self = .pushBudgetExhausted(budget: budget, retryAfter: .seconds(seconds))
        case "invalid_transition":
            guard let command = string("command"), let state = string("state").flatMap(ActivityState.init(rawValue:))
            else { return nil }
            self = .invalidTransition(command: command, state: state)
        case "not_due":
            guard let command = string("command") else { return nil }
            self = .notDue(command: command, dueAt: instant("dueAt"))
        case "push_to_start_budget_exhausted":
            guard let budget = int("budget"), let seconds = int("retryAfterSeconds") else { return nil }
            self = .pushToStartBudgetExhausted(
                deviceID: string("deviceId").flatMap(DeviceID.init(rawValue:)),
                budget: budget,
                retryAfter: .seconds(seconds)
            )
        case "push_to_start_token_missing":
            guard let activityType = string("activityType") else { return nil }
            self = .pushToStartTokenMissing(
                deviceID: string("deviceId").flatMap(DeviceID.init(rawValue:)),
                activityType: activityType
            )
        case "channel_not_found":
            guard let channelID = string("channelId") else { return nil }
            self = .channelNotFound(channelID: channelID)
        default:
            return nil
        }
    }
}

public import CanonicalJSON

/// The numbers the lifecycle enforces, in one value an operator can configure.
///
/// The defaults are Apple's platform numbers (payload size, lifetime, dismissal window,
/// timestamp lead) and Liveline's policy defaults (caps, update budget). Tests, staging and
/// demos shorten the durations.
public struct LifecyclePolicy: Hashable, Sendable {
    /// *Platform*: encoded `attributes` + `contentState` of a request or update, in bytes.
    public var maximumPayloadSize: Int = 4096
    /// *Platform*: how long an activity may be active or stale, counted from when it became active.
    public var activeLifetime: Duration = .seconds(8 * 3600)
    /// *Platform*: how long an ended activity may stay on screen.
    public var dismissalWindow: Duration = .seconds(4 * 3600)
    /// *Platform*: how far ahead of the server's clock a command's `timestamp` may be.
    public var maximumTimestampLead: Duration = .seconds(8 * 3600)
    /// *Policy*: open activities per app, unless the app sets its own.
    public var defaultMaxOpen: Int = 5
    /// *Policy*: open activities in the whole service, unless the operator sets another.
    public var defaultGlobalMaxOpen: Int = 100_000
    /// *Policy*: priority-10 updates per activity in any rolling hour.
    public var defaultPriorityBudgetPerHour: Int = 10
    /// *Policy*: the same, for an app flagged `frequentUpdates`.
    public var frequentUpdatesPriorityBudgetPerHour: Int = 60
    /// *Policy*: remote starts per device in any rolling hour (a device's own push-to-start
    /// budget is small, and spent silently).
    public var defaultPushToStartBudgetPerHour: Int = 10
    /// *Policy*: at most one widget reload per device in this many seconds, unless the app sets
    /// another: 30 minutes, 48 a day, within WidgetKit's typical budget of 40–70 a day per widget.
    public var defaultWidgetReloadIntervalSeconds: Int = 1800
    /// *Policy*: how long after APNs accepted a remote start the device has to report the new
    /// activity's push token before the start is recorded unconfirmed (`activity.start_unconfirmed`).
    /// A device that is online shows the activity and reports its token within seconds; one that
    /// is offline gets the start when it comes back, within the start's expiration.
    public var startConfirmationWindow: Duration = .seconds(15 * 60)
    /// *Policy*: unconfirmed starts in a row to one push-to-start token that make it suspect.
    public var suspectAfterUnconfirmedStarts: Int = 3

    /// The window of the update budget: any rolling hour (not configurable: the budget is per hour).
    public static let budgetWindow: Duration = .seconds(3600)

    public init() {}

    /// The platform's numbers and Liveline's defaults.
    public static let standard = LifecyclePolicy()
}

/// What one app allows, from its settings.
public struct AppRules: Hashable, Sendable {
    public var maxOpen: Int
    /// `nil`: no per-device cap.
    public var maxOpenPerDevice: Int?
    public var priorityBudgetPerHour: Int
    public var frequentUpdates: Bool
    /// Remote starts per device in any rolling hour.
    public var pushToStartBudgetPerHour: Int

    public init(
        maxOpen: Int,
        maxOpenPerDevice: Int? = nil,
        priorityBudgetPerHour: Int,
        frequentUpdates: Bool = false,
        pushToStartBudgetPerHour: Int = LifecyclePolicy.standard.defaultPushToStartBudgetPerHour
    ) {
        self.maxOpen = maxOpen
        self.maxOpenPerDevice = maxOpenPerDevice
        self.priorityBudgetPerHour = priorityBudgetPerHour
        self.frequentUpdates = frequentUpdates
        self.pushToStartBudgetPerHour = pushToStartBudgetPerHour
    }

    /// An app with the policy's defaults.
    public init(defaultsOf policy: LifecyclePolicy) {
        self.init(
            maxOpen: policy.defaultMaxOpen,
            priorityBudgetPerHour: policy.defaultPriorityBudgetPerHour,
            pushToStartBudgetPerHour: policy.defaultPushToStartBudgetPerHour
        )
    }

    /// Priority-10 updates allowed per activity per rolling hour.
    public func updateBudget(under policy: LifecyclePolicy) -> Int {
        frequentUpdates
            ? max(priorityBudgetPerHour, policy.frequentUpdatesPriorityBudgetPerHour) : priorityBudgetPerHour
    }
}

/// Open activities right now, not counting the one being requested; supplied by the store.
public struct OpenCounts: Hashable, Sendable {
    public var app: Int
    public var global: Int
    /// Open activities of the request's device (0 when the request names none).
    public var device: Int

    public init(app: Int, global: Int, device: Int = 0) {
        self.app = app
        self.global = global
        self.device = device
    }
}

/// Everything besides the activity that a decision depends on.
public struct DecisionContext: Hashable, Sendable {
    public var app: AppRules
    public var globalMaxOpen: Int
    /// Checked by requests only.
    public var open: OpenCounts
    /// When the requesting device's recent remote starts were requested (at least those of the
    /// last hour, in any order); checked by remote starts only.
    public var remoteStarts: [Timestamp]

    public init(app: AppRules, globalMaxOpen: Int, open: OpenCounts, remoteStarts: [Timestamp] = []) {
        self.app = app
        self.globalMaxOpen = globalMaxOpen
        self.open = open
        self.remoteStarts = remoteStarts
    }
}

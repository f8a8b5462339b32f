public import ActivityLifecycle

/// An activity as delivery sees it: the lifecycle's state, and the version of the event whose
/// content it shows (the request, an update, or an end that carried content).
public struct DeliveryState: Hashable, Sendable {
    public private(set) var activity: Activity
    /// `1` while the content is still the requested one.
    public private(set) var contentVersion: Int

    /// The state after folding `event` onto `state` (`nil` before the first event).
    public init(_ state: DeliveryState?, folding event: ActivityEvent, by lifecycle: Lifecycle) throws(IllegalEvent) {
        activity = try lifecycle.evolve(state?.activity, with: event)
        contentVersion =
            switch event.payload {
            case .requested, .updated: event.version
            case .ended(let ended) where ended.content != nil: event.version
            default:
                state?.contentVersion ?? event.version
            }
    }
}

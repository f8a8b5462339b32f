/// One activity's stream: the events of `(app, activity)`.
public struct StreamID: Hashable, Sendable, CustomStringConvertible {
    public var app: AppID
    public var activity: ActivityID

    public init(app: AppID, activity: ActivityID) {
        self.app = app
        self.activity = activity
    }

    public var description: String { "\(app)/\(activity)" }
}

/// A stored stream holds an event the state machine could not have produced.
public struct CorruptionError: Error, Hashable, Sendable, CustomStringConvertible {
    public let stream: StreamID
    public let version: Int
    public let reason: String

    public var description: String { "stream \(stream), version \(version): \(reason)" }
}

extension Lifecycle {
    /// Folds a stored stream, strictly: the first event the machine could not have produced
    /// stops the fold with a `CorruptionError` naming the stream, the version and the reason.
    ///
    /// - Returns: the activity's state, or `nil` for an empty stream.
    public func fold(_ events: some Sequence<ActivityEvent>, of stream: StreamID) throws(CorruptionError) -> Activity? {
        var activity: Activity?
        for event in events {
            do {
                activity = try evolve(activity, with: event)
            } catch {
                throw CorruptionError(stream: stream, version: event.version, reason: error.reason)
            }
        }
        return activity
    }
}

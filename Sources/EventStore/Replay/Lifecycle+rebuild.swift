public import ActivityLifecycle

extension Lifecycle {
    /// The projection of a stored stream (at least one event), folded strictly.
    public func rebuild(_ events: [StoredEvent]) throws(CorruptionError) -> StoredActivity {
        let stream = events[0].stream
        // A stream with events always folds to an activity.
        let activity = try fold(events.map(\.event), of: stream)!
        return StoredActivity(stream: stream, activity: activity, nextDeadline: nextDeadline(of: activity))
    }
}

public import ActivityLifecycle
public import EventStore

extension EventStore {
    /// The tokens the activity's pushes went to, and which APNs declared dead; `nil` when there
    /// is no such activity.
    public func tokenLineage(of stream: StreamID) async throws -> TokenLineage? {
        // The events that bring tokens: the request (a remote start's) and each registration.
        let events = try await events(of: stream, types: [.requested, .pushTokenChanged]).map(\.event)
        guard !events.isEmpty else { return nil }
        return TokenLineage(events: events, deaths: try await tokenDeaths(of: stream, events: events))
    }
}

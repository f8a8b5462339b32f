public import ActivityLifecycle
import CanonicalJSON
public import EventStore

extension EventStore {
    /// The tokens the activity's pushes went to, and which APNs declared dead; `nil` when there
    /// is no such activity.
    public func tokenLineage(of stream: StreamID) async throws -> TokenLineage? {
        // The events that bring tokens: the request (a remote start's) and each registration.
        let events = try await events(of: stream, types: [.requested, .pushTokenChanged]).map(\.event)
        guard !events.isEmpty else { return nil }
        var remoteStart: (slot: PushToStartSlot, token: String, requestedAt: Timestamp)? = nil
        if case .requested(let requested) = events[0].payload, let token = requested.remoteStart?.pushToStartToken,
            let device = requested.deviceID
        {
            let slot = PushToStartSlot(app: stream.app, device: device, activityType: requested.activityType)
            remoteStart = (slot, token, events[0].occurredAt)
        }
        let deaths = try await withConnection { [remoteStart] in
            try LineageQueries.deaths(of: stream, remoteStart: remoteStart, $0)
        }
        return TokenLineage(events: events, deaths: deaths)
    }
}

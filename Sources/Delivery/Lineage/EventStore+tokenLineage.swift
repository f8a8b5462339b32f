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
        return TokenLineage(events: events, deaths: try await tokenDeaths(of: stream, events: events))
    }

    /// APNs' verdicts on the tokens that the activity's `events` (read from the log or an
    /// archive) brought, as the live tables hold them.
    public func tokenDeaths(of stream: StreamID, events: [ActivityEvent]) async throws -> [TokenLineage.TokenDeath] {
        var remoteStart: (slot: PushToStartSlot, token: String, requestedAt: Timestamp)? = nil
        if case .requested(let requested) = events.first?.payload, let token = requested.remoteStart?.pushToStartToken,
            let device = requested.deviceID, let requestedAt = events.first?.occurredAt
        {
            let slot = PushToStartSlot(app: stream.app, device: device, activityType: requested.activityType)
            remoteStart = (slot, token, requestedAt)
        }
        return try await withConnection { [remoteStart] in
            try LineageQueries.deaths(of: stream, remoteStart: remoteStart, $0)
        }
    }
}

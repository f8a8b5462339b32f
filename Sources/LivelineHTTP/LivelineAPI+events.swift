import ActivityLifecycle
import EventStore
import OpenAPIRuntime

extension LivelineAPI {
    func readEventFeed(_ input: Operations.ReadEventFeed.Input) async throws -> Operations.ReadEventFeed.Output {
        let app = try Caller.app()
        let after = try Self.position(input.query.after, field: "after") ?? 0
        let events = try await store.events(
            after: after,
            app: app,
            limit: try Self.limit(input.query.limit, default: 100, maximum: 1000)
        )
        if events.isEmpty && after > 0 { try await requireWithinLog(after) }
        return .ok(
            .init(body: .json(.init(events: events.map { .init($0) }, nextAfter: events.last?.position ?? after)))
        )
    }

    func streamEvents(_ input: Operations.StreamEvents.Input) async throws -> Operations.StreamEvents.Output {
        let app = try Caller.app()
        let lastEventID = try input.headers.lastEventID.map { id in
            guard let position = Int64(id.trimmingHTTPWhitespace) else {
                throw Problem.invalidRequest("Last-Event-ID must be the id of an event sent.", field: "Last-Event-ID")
            }
            return position
        }
        let after = try lastEventID ?? Self.position(input.query.after, field: "after") ?? 0
        // Before the answer's 200: a database that cannot be reached is a 503, not a cut stream.
        try await requireWithinLog(after)
        let stream = EventFeedStream(store: store, listener: dependencies.listener, app: app, after: after)
        return .ok(.init(body: .textEventStream(HTTPBody(stream, length: .unknown, iterationBehavior: .single))))
    }

    /// Refuses a position beyond the end of the log: a reader that would otherwise wait, without
    /// knowing, for events this log will number differently.
    private func requireWithinLog(_ position: Int64) async throws {
        let end = try await store.lastPosition()
        guard position <= end else { throw Problem.positionBeyondLog(position, end: end) }
    }

    private static func position(_ value: Int64?, field: String) throws -> Int64? {
        guard let value else { return nil }
        guard value >= 0 else { throw Problem.invalidRequest("\(field) must be a position ≥ 0.", field: field) }
        return value
    }
}

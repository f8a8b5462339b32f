import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventStore
import Logging
import OpenAPIRuntime

/// The operations of openapi.yaml that the generated code serves (all but the writes on
/// activities, `ActivityWriteRoutes`, which run their commands through `run` here too). Each
/// handler reads its input, runs one store call and shapes the answer; refusals are thrown as
/// `Problem`s, answered by `ProblemResponses`.
struct LivelineAPI: APIProtocol {
    let dependencies: APIDependencies
    let authenticator: Authenticator
    let document: [UInt8]
    let logger: Logger

    var store: EventStore { dependencies.store }

    // MARK: Activities

    func getActivity(_ input: Operations.GetActivity.Input) async throws -> Operations.GetActivity.Output {
        let stream = try stream(input.path.activityId)
        guard let stored = try await store.activity(stream) else { throw Problem(Rejection.activityNotFound) }
        var body = Components.Schemas.Activity(stored)
        body.lastDelivery = try await store.deliveries(of: stream, limit: 1).first.map(Components.Schemas.Delivery.init)
        let lineage = try await store.tokenLineage(of: stream)
        body.tokens = lineage?.links.map(Components.Schemas.TokenLink.init)
        body.channelId = lineage?.channelID
        return .ok(.init(headers: .init(eTag: EntityTag.of(stored)), body: .json(body)))
    }

    func listActivities(_ input: Operations.ListActivities.Input) async throws -> Operations.ListActivities.Output {
        let app = try Caller.app()
        let page = try await store.activities(
            of: app,
            in: input.query.state,
            limit: try Self.limit(input.query.limit, default: 50, maximum: 200),
            after: try input.query.cursor.map(PageCursor.cursor)
        )
        return .ok(
            .init(
                body: .json(
                    .init(activities: page.activities.map { .init($0) }, nextCursor: page.next.map(PageCursor.token))
                )
            )
        )
    }

    func reportDismissal(_ input: Operations.ReportDismissal.Input) async throws -> Operations.ReportDismissal.Output {
        let stream = try stream(input.path.activityId)
        let stored = try await run(
            .dismiss(.userRemoved),
            on: stream,
            ifMatch: input.headers.ifMatch,
            idempotency: try idempotency(
                input.headers.idempotencyKey,
                (Operations.ReportDismissal.id, JSONObject.empty),
                stream,
                input.headers.ifMatch
            )
        )
        return .ok(Self.response(stored))
    }

    func registerPushToken(
        _ input: Operations.RegisterPushToken.Input
    ) async throws -> Operations.RegisterPushToken.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let stream = try stream(input.path.activityId)
        let stored = try await run(
            try .registerPushToken(body),
            on: stream,
            ifMatch: input.headers.ifMatch,
            idempotency: try idempotency(
                input.headers.idempotencyKey,
                (Operations.RegisterPushToken.id, body),
                stream,
                input.headers.ifMatch
            )
        )
        return .ok(Self.response(stored))
    }

    func listActivityEvents(
        _ input: Operations.ListActivityEvents.Input
    ) async throws -> Operations.ListActivityEvents.Output {
        let events = try await store.events(of: try stream(input.path.activityId))
        guard !events.isEmpty else { throw Problem(Rejection.activityNotFound) }
        return .ok(.init(body: .json(.init(events: events.map { .init($0) }))))
    }

    // MARK: Shared steps

    /// Runs a command of the calling app and answers with the activity it left, or throws the
    /// refusal.
    func run(
        _ command: Command,
        on stream: StreamID,
        ifMatch: String?,
        idempotency: IdempotencyKey?
    ) async throws -> StoredActivity {
        // Without If-Match, the store decides again on the activity as it is when another
        // command committed first.
        let result = try await store.execute(
            command,
            on: stream,
            at: dependencies.clock(),
            expectedVersion: try EntityTag.version(in: ifMatch),
            idempotency: idempotency
        )
        switch result.outcome {
        case .accepted(let stored, _): return stored
        case .rejected(let rejection): throw Problem(rejection)
        }
    }

    /// An `Idempotency-Key` (checked) bound to `request`, the body the generated code decoded.
    private func idempotency(
        _ key: String?,
        _ request: (operation: String, body: some Encodable),
        _ stream: StreamID,
        _ ifMatch: String?
    ) throws -> IdempotencyKey? {
        try key.map(IdempotencyKeys.validated).map { key in
            IdempotencyKey(
                key: key,
                requestDigest: try IdempotencyKeys.digest(
                    request.operation,
                    stream.activity,
                    ifMatch,
                    body: request.body
                )
            )
        }
    }

    /// The calling app's stream of the activity the path names.
    func stream(_ activityID: String) throws -> StreamID {
        guard let activity = ActivityID(rawValue: activityID) else {
            throw Problem.invalidRequest(
                "The activity id in the path must be \(IdentifierRules.requirement).",
                field: "activityId"
            )
        }
        return StreamID(app: try Caller.app(), activity: activity)
    }

    private static func response(_ stored: StoredActivity) -> Components.Responses.Activity {
        .init(headers: .init(eTag: EntityTag.of(stored)), body: .json(.init(stored)))
    }

    /// A page size from the query, checked against its range.
    static func limit(_ value: Int?, default defaultValue: Int, maximum: Int) throws -> Int {
        guard let value else { return defaultValue }
        guard (1...maximum).contains(value) else {
            throw Problem.invalidRequest("limit must be between 1 and \(maximum).", field: "limit")
        }
        return value
    }
}

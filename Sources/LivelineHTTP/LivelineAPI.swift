import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventStore
import Logging
import OpenAPIRuntime

/// The operations of openapi.yaml. Each handler reads its input, runs one store call and shapes
/// the answer; refusals are thrown as `Problem`s, answered by `ProblemResponses`.
struct LivelineAPI: APIProtocol {
    let dependencies: APIDependencies
    let authenticator: Authenticator
    let document: [UInt8]
    let logger: Logger

    var store: EventStore { dependencies.store }

    // MARK: Activities

    func requestActivity(_ input: Operations.RequestActivity.Input) async throws -> Operations.RequestActivity.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let stored = try await request(body, idempotencyKey: input.headers.idempotencyKey)
        return .created(
            .init(
                headers: .init(eTag: EntityTag.of(stored), location: Self.location(of: stored)),
                body: .json(.init(stored))
            )
        )
    }

    /// `requestActivity`, from its body and key however they were read (`OwnJSONOperations`).
    func request(_ body: Components.Schemas.ActivityRequest, idempotencyKey: String?) async throws -> StoredActivity {
        let app = try Caller.app()
        let key = try idempotencyKey.map(IdempotencyKeys.validated)
        let activity = body.activityId ?? ActivityID.generated(for: app, idempotencyKey: key)
        var request = try Command.Request(body)
        request.channel = try await channel(asked: body, of: app)
        request.remoteStart = try await remoteStart(asked: body, of: app)
        return try await run(
            .request(request),
            on: StreamID(app: app, activity: activity),
            ifMatch: nil,
            idempotencyKey: key,
            request: (Operations.RequestActivity.id, body)
        )
    }

    /// Where a requested activity is read (`Location`).
    static func location(of stored: StoredActivity) -> String {
        "/v1/activities/\(stored.stream.activity)"
    }

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

    func updateActivity(_ input: Operations.UpdateActivity.Input) async throws -> Operations.UpdateActivity.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let stored = try await update(
            input.path.activityId,
            with: body,
            ifMatch: input.headers.ifMatch,
            idempotencyKey: input.headers.idempotencyKey
        )
        return .ok(Self.response(stored))
    }

    /// `updateActivity`, from its parameters and body however they were read (`OwnJSONOperations`
    /// reads them without the generated decoders).
    func update(
        _ activityID: String,
        with body: Components.Schemas.ActivityUpdate,
        ifMatch: String?,
        idempotencyKey: String?
    ) async throws -> StoredActivity {
        try await run(
            .update(Command.Update(body)),
            on: try stream(activityID),
            ifMatch: ifMatch,
            idempotencyKey: try idempotencyKey.map(IdempotencyKeys.validated),
            request: (Operations.UpdateActivity.id, body)
        )
    }

    func endActivity(_ input: Operations.EndActivity.Input) async throws -> Operations.EndActivity.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let stored = try await end(
            input.path.activityId,
            with: body,
            ifMatch: input.headers.ifMatch,
            idempotencyKey: input.headers.idempotencyKey
        )
        return .ok(Self.response(stored))
    }

    /// `endActivity`, from its parameters and body however they were read (`OwnJSONOperations`).
    func end(
        _ activityID: String,
        with body: Components.Schemas.ActivityEnd,
        ifMatch: String?,
        idempotencyKey: String?
    ) async throws -> StoredActivity {
        try await run(
            .end(try Command.End(body)),
            on: try stream(activityID),
            ifMatch: ifMatch,
            idempotencyKey: try idempotencyKey.map(IdempotencyKeys.validated),
            request: (Operations.EndActivity.id, body)
        )
    }

    func reportDismissal(_ input: Operations.ReportDismissal.Input) async throws -> Operations.ReportDismissal.Output {
        let stored = try await run(
            .dismiss(.userRemoved),
            on: try stream(input.path.activityId),
            ifMatch: input.headers.ifMatch,
            idempotencyKey: try input.headers.idempotencyKey.map(IdempotencyKeys.validated),
            request: (Operations.ReportDismissal.id, JSONObject.empty)
        )
        return .ok(Self.response(stored))
    }

    func registerPushToken(
        _ input: Operations.RegisterPushToken.Input
    ) async throws -> Operations.RegisterPushToken.Output {
        guard case .json(let body) = input.body else { preconditionFailure("the only content type") }
        let stored = try await run(
            try .registerPushToken(body),
            on: try stream(input.path.activityId),
            ifMatch: input.headers.ifMatch,
            idempotencyKey: try input.headers.idempotencyKey.map(IdempotencyKeys.validated),
            request: (Operations.RegisterPushToken.id, body)
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

    /// The remote start a request asks for, with the device's current push-to-start token for
    /// the type; without one, the store refuses the request (`push_to_start_token_missing`),
    /// recorded like every rejection and under its idempotency key.
    private func remoteStart(asked body: Components.Schemas.ActivityRequest, of app: AppID) async throws -> RemoteStart?
    {
        guard let remoteStart = body.remoteStart else { return nil }
        guard let device = body.deviceId else {
            throw Problem.invalidRequest("A remote start goes to one device: send its deviceId.", field: "/deviceId")
        }
        let slot = PushToStartSlot(app: app, device: device, activityType: body.activityType)
        let token = try await store.pushToStartToken(of: slot)?.current?.token
        return RemoteStart(pushToStartToken: token, alert: Alert(remoteStart.alert))
    }

    /// The channel a request names, with its storage policy when the app has it (else the
    /// store refuses the request, `channel_not_found`, recorded like every rejection).
    private func channel(
        asked body: Components.Schemas.ActivityRequest,
        of app: AppID
    ) async throws -> BroadcastChannel? {
        guard let id = body.channelId else {
            guard body.pushType != .channel else {
                throw Problem.invalidRequest(
                    "pushType channel needs the channelId of one of the app's channels "
                        + "(POST /v1/admin/apps/{appId}/channels).",
                    field: "/channelId"
                )
            }
            return nil
        }
        guard body.pushType != .token else {
            throw Problem.invalidRequest(
                "An activity on a channel is updated by broadcast: send pushType channel (or none) with channelId.",
                field: "/pushType"
            )
        }
        guard StoredChannel.isWellFormedID(id) else {
            throw Problem.invalidRequest(
                "channelId must be a channel id as APNs gives them (base64).",
                field: "/channelId"
            )
        }
        if body.remoteStart != nil && body.deviceId == nil { throw Problem.broadcastCannotStart }
        let stored = try await store.channel(id, of: app)
        return BroadcastChannel(id: id, storagePolicy: stored?.deletedAt == nil ? stored?.storagePolicy : nil)
    }

    // MARK: Shared steps

    /// Runs a command of the calling app and answers with the activity it left, or throws the
    /// refusal. `request` is what an idempotency key is bound to.
    private func run(
        _ command: Command,
        on stream: StreamID,
        ifMatch: String?,
        idempotencyKey: String?,
        request: (operation: String, body: some Encodable)
    ) async throws -> StoredActivity {
        let idempotency = try idempotencyKey.map { key in
            IdempotencyKey(
                key: key,
                requestDigest: try IdempotencyKeys.digest(request.operation, stream.activity, ifMatch, request.body)
            )
        }
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

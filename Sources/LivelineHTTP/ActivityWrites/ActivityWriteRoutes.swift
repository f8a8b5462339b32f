import ActivityLifecycle
import CanonicalJSON
import EventStore
import HTTPTypes
import Hummingbird

/// The write operations on activities — `requestActivity`, `updateActivity` and `endActivity` in
/// openapi.yaml — as plain Hummingbird routes. They carry nearly all of the traffic, so each
/// reads its body once, from its bytes straight into the command (`ActivityBodies.swift`),
/// binds an `Idempotency-Key` to the canonical form of those bytes, and writes the activity with
/// Liveline's own JSON writer. The other operations are the generated code's.
///
/// openapi.yaml stays the contract: the tests call these routes through the client generated
/// from it, which checks every answer, and hold what the routes accept and refuse to it.
struct ActivityWriteRoutes<Context: RequestContext>: Sendable {
    let api: LivelineAPI
    let authenticator: Authenticator
    let problems: ProblemResponses

    /// The routes, as the document names their paths, for answering a method they do not take.
    static var operations: [(path: String, method: HTTPRequest.Method)] {
        [
            ("/v1/activities", .post), ("/v1/activities/{activityId}/updates", .post),
            ("/v1/activities/{activityId}/end", .post),
        ]
    }

    func register(on router: Router<Context>) {
        router.post("/v1/activities") { request, context in
            try await serve(request, context, operation: "requestActivity", status: .created) { write in
                let body = try ActivityRequestBody(write.body)
                let app = try Caller.app()
                let key = try write.idempotencyKey()
                let activity = body.activityID ?? ActivityID.generated(for: app, idempotencyKey: key)
                var command = body.command
                command.channel = try await channel(body.channelID, of: app)
                command.remoteStart = try await remoteStart(body, of: app)
                return try await api.run(
                    .request(command),
                    on: StreamID(app: app, activity: activity),
                    ifMatch: nil,
                    idempotency: try write.idempotency(key, "requestActivity", activity)
                )
            }
        }
        router.post("/v1/activities/:activityId/updates") { request, context in
            try await serve(request, context, operation: "updateActivity") { body throws(Problem) in
                .update(try Command.Update(body: body))
            }
        }
        router.post("/v1/activities/:activityId/end") { request, context in
            try await serve(request, context, operation: "endActivity") { body throws(Problem) in
                .end(try Command.End(body: body))
            }
        }
    }

    /// Serves a command on the activity the path names, read from the body by `read`.
    private func serve(
        _ request: Request,
        _ context: Context,
        operation: String,
        read: @escaping ([UInt8]) throws(Problem) -> Command
    ) async throws -> Response {
        try await serve(request, context, operation: operation, status: .ok) { write in
            let command = try read(write.body)
            let stream = try api.stream(try Self.activityID(context))
            return try await api.run(
                command,
                on: stream,
                ifMatch: write.ifMatch,
                idempotency: try write.idempotency(try write.idempotencyKey(), operation, stream.activity)
            )
        }
    }

    /// The path's activity id, its `%XX` escapes decoded as the generated code decodes them.
    private static func activityID(_ context: Context) throws -> String {
        let segment = try context.parameters.require("activityId")
        return segment.removingPercentEscapes ?? segment
    }

    /// Authenticates the caller, reads the request and runs `write` for it, answering with the
    /// activity it leaves; every error is answered as a problem, as for the other operations.
    private func serve(
        _ request: Request,
        _ context: Context,
        operation: String,
        status: HTTPResponse.Status,
        write: (WriteRequest) async throws -> StoredActivity
    ) async throws -> Response {
        do {
            let caller = try await authenticator.caller(of: request.head)
            let input = try await WriteRequest(request)
            let stored = try await Caller.$current.withValue(caller) { try await write(input) }
            var headers: HTTPFields = [.contentType: "application/json; charset=utf-8", .eTag: EntityTag.of(stored)]
            if status == .created { headers[.location] = "/v1/activities/\(stored.stream.activity)" }
            return Response(
                status: status,
                headers: headers,
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: stored.apiJSON))
            )
        } catch {
            throw problems.problem(for: error, request: request.head, operationID: operation)
        }
    }

    /// The channel a request names, with its storage policy when the app has it (else the
    /// store refuses the request, `channel_not_found`, recorded like every rejection).
    private func channel(_ id: String?, of app: AppID) async throws -> BroadcastChannel? {
        guard let id else { return nil }
        let stored = try await api.store.channel(id, of: app)
        return BroadcastChannel(id: id, storagePolicy: stored?.deletedAt == nil ? stored?.storagePolicy : nil)
    }

    /// The remote start a request asks for, with the device's current push-to-start token for
    /// the type; without one, the store refuses the request (`push_to_start_token_missing`),
    /// recorded like every rejection and under its idempotency key.
    private func remoteStart(_ body: ActivityRequestBody, of app: AppID) async throws -> RemoteStart? {
        guard let alert = body.remoteStartAlert, let device = body.command.deviceID else { return nil }
        let slot = PushToStartSlot(app: app, device: device, activityType: body.command.activityType)
        let token = try await api.store.pushToStartToken(of: slot)?.current?.token
        return RemoteStart(pushToStartToken: token, alert: alert)
    }
}

/// What a write route reads of its request before the body's members: the body's bytes, checked
/// to be strict JSON of the media type the document names, and the headers it takes.
struct WriteRequest: Sendable {
    let body: [UInt8]
    /// `If-Match`, as the client meant it.
    let ifMatch: String?
    private let idempotencyKeyText: String?

    init(_ request: Request) async throws {
        let fields = request.headers
        if let accept = fields[.accept], !Self.acceptsJSON(accept) { throw Problem.notAcceptable(accept) }
        let buffer = try await request.body.collect(upTo: maximumRequestBodySize)
        body = [UInt8](buffer: buffer)
        // Any JSON is held to strict JSON first, as for every operation (`StrictJSONBodies`).
        if StrictJSONBodies.isJSON(fields[.contentType]), !body.isEmpty {
            do {
                try JSONParser.validate(body, refusingRepeatedKeys: true)
            } catch {
                throw Problem.malformedJSON(error.description)
            }
        }
        guard let contentType = fields[.contentType], Self.isJSON(contentType) else {
            throw Problem.unsupportedMediaType(fields[.contentType])
        }
        guard !body.isEmpty else { throw Problem.invalidRequest("This operation takes a JSON body.") }
        // Clients generated from the document percent-encode header values (`%223%22`); no value
        // the header's pattern admits holds `%`, so decoding changes none of those.
        ifMatch = fields[.ifMatch].map { $0.removingPercentEscapes ?? $0 }
        idempotencyKeyText = fields[PlainHeaders.idempotencyKey]
    }

    /// `Idempotency-Key`, checked.
    func idempotencyKey() throws -> String? {
        try idempotencyKeyText.map(IdempotencyKeys.validated)
    }

    /// The key bound to this request: the operation, the activity, `If-Match` and the body's
    /// canonical JSON.
    func idempotency(_ key: String?, _ operation: String, _ activity: ActivityID) throws -> IdempotencyKey? {
        guard let key else { return nil }
        return IdempotencyKey(
            key: key,
            requestDigest: IdempotencyKeys.digest(operation, activity, ifMatch, canonicalBody: try canonicalBody())
        )
    }

    private func canonicalBody() throws -> [UInt8] {
        do {
            return try JSONParser.parseObject(body).canonicalJSON
        } catch {
            // Read already: the body is an object of valid JSON.
            throw Problem.malformedJSON(error.description)
        }
    }

    /// `application/json`, with parameters or without.
    private static func isJSON(_ contentType: String) -> Bool {
        contentType.prefix { $0 != ";" }.trimmingHTTPWhitespace.equalsIgnoringASCIICase("application/json")
    }

    /// Whether an `Accept` list admits `application/json`.
    private static func acceptsJSON(_ accept: String) -> Bool {
        accept.split(separator: ",").contains { range in
            let mediaRange = range.prefix { $0 != ";" }.trimmingHTTPWhitespace
            return mediaRange.equalsIgnoringASCIICase("application/json")
                || mediaRange.equalsIgnoringASCIICase("application/*") || mediaRange == "*/*"
        }
    }
}

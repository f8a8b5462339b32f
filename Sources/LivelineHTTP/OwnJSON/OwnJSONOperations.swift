import ActivityLifecycle
import EventStore
import HTTPTypes
import OpenAPIRuntime

/// The hot operations, `requestActivity`, `updateActivity` and `endActivity`, read and answered
/// with Liveline's own JSON parser and writer rather than the generated decoders and Foundation's
/// coders, which cost about a third of the server's CPU for each update.
///
/// openapi.yaml stays the contract: this middleware takes a request only when it is one the
/// generated code would read to the same input — a body the own reader reads (a request without
/// `remoteStart` or `channelId`), a plain activity id, plain header values, JSON accepted — and hands every other request on to the generated
/// code unchanged, which reads it or refuses it as always. It runs innermost, so
/// authentication, strict JSON, header handling and problem responses apply as for any
/// operation. The same handler runs either way (`LivelineAPI.request`, `.update`, `.end`); tests
/// check that both paths read the same input and write the same JSON.
struct OwnJSONOperations: ServerMiddleware {
    let api: LivelineAPI

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        metadata: ServerRequestMetadata,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let ifMatch = request.headerFields[.ifMatch]
        let idempotencyKey = request.headerFields[PlainHeaders.idempotencyKey]
        switch operationID {
        case Operations.RequestActivity.id:
            return try await serve(request, body, metadata, next, read: Components.Schemas.ActivityRequest.init) {
                let stored = try await api.request($0, idempotencyKey: idempotencyKey)
                var response = HTTPResponse(status: .created)
                response.headerFields[.location] = LivelineAPI.location(of: stored)
                return (response, stored)
            }
        case Operations.UpdateActivity.id:
            guard let activityID = Self.activityID(metadata) else { break }
            return try await serve(request, body, metadata, next, read: Components.Schemas.ActivityUpdate.init) {
                let stored = try await api.update(
                    activityID,
                    with: $0,
                    ifMatch: ifMatch,
                    idempotencyKey: idempotencyKey
                )
                return (HTTPResponse(status: .ok), stored)
            }
        case Operations.EndActivity.id:
            guard let activityID = Self.activityID(metadata) else { break }
            return try await serve(request, body, metadata, next, read: Components.Schemas.ActivityEnd.init) {
                let stored = try await api.end(activityID, with: $0, ifMatch: ifMatch, idempotencyKey: idempotencyKey)
                return (HTTPResponse(status: .ok), stored)
            }
        default:
            break
        }
        return try await next(request, body, metadata)
    }

    /// Reads the request's body with `read` and runs it with `run`, which answers with its status
    /// and headers and the activity; or hands the request to `next` as it came.
    private func serve<Input>(
        _ request: HTTPRequest,
        _ body: HTTPBody?,
        _ metadata: ServerRequestMetadata,
        _ next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?),
        read: ([UInt8]) -> Input?,
        run: (Input) async throws -> (HTTPResponse, StoredActivity)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard let body, Self.isPlain(request) else {
            return try await next(request, body, metadata)
        }
        let bytes = try await [UInt8](collecting: body, upTo: maximumRequestBodySize)
        guard let input = read(bytes) else {
            return try await next(request, HTTPBody(bytes), metadata)
        }
        var (response, stored) = try await run(input)
        response.headerFields[.eTag] = EntityTag.of(stored)
        response.headerFields[.contentType] = "application/json; charset=utf-8"
        return (response, HTTPBody(stored.ownJSON))
    }

    /// The path's activity id, when the generated code would read it as it is.
    private static func activityID(_ metadata: ServerRequestMetadata) -> String? {
        guard let activityID = metadata.pathParameters["activityId"].map(String.init),
            ActivityID(rawValue: activityID) != nil
        else { return nil }
        return activityID
    }

    /// Whether the generated code would read the request's headers as they are: JSON sent and
    /// accepted, and `If-Match` and `Idempotency-Key` (escaped by `PlainHeaders`) without the
    /// characters its URI decoding reads differently (`%`, `+`, `,`).
    private static func isPlain(_ request: HTTPRequest) -> Bool {
        let fields = request.headerFields
        guard let contentType = fields[.contentType],
            contentType.equalsIgnoringASCIICase("application/json")
                || contentType.equalsIgnoringASCIICase("application/json; charset=utf-8")
        else { return false }
        if let accept = fields[.accept], accept != "*/*", !accept.equalsIgnoringASCIICase("application/json") {
            return false
        }
        return [fields[.ifMatch], fields[PlainHeaders.idempotencyKey]].allSatisfy { value in
            guard let value else { return true }
            return value.isVisibleASCII(lengths: 1...1024)
                && !value.utf8.contains {
                    $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: ",")
                }
        }
    }
}

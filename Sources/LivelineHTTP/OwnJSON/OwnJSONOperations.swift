import ActivityLifecycle
import EventStore
import HTTPTypes
import OpenAPIRuntime

/// The hot operations, `updateActivity` and `endActivity`, read and answered with Liveline's own
/// JSON parser and writer rather than the generated decoders and Foundation's coders, which cost
/// about a third of the server's CPU for each update.
///
/// openapi.yaml stays the contract: this middleware takes a request only when it is one the
/// generated code would read to the same input — a body the own reader reads, a plain activity
/// id, plain header values, JSON accepted — and hands every other request on to the generated
/// code unchanged, which reads it or refuses it as always. It runs innermost, so
/// authentication, strict JSON, header handling and problem responses apply as for any
/// operation. The same handler runs either way (`LivelineAPI.update`, `LivelineAPI.end`); tests
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
        switch operationID {
        case Operations.UpdateActivity.id:
            try await serve(
                request,
                body,
                metadata,
                next,
                read: Components.Schemas.ActivityUpdate.init(ownJSON:),
                run: api.update
            )
        case Operations.EndActivity.id:
            try await serve(
                request,
                body,
                metadata,
                next,
                read: Components.Schemas.ActivityEnd.init(ownJSON:),
                run: api.end
            )
        default:
            try await next(request, body, metadata)
        }
    }

    /// Reads the request with `read` and runs it with `run`, or hands it to `next` as it came.
    private func serve<Body>(
        _ request: HTTPRequest,
        _ body: HTTPBody?,
        _ metadata: ServerRequestMetadata,
        _ next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?),
        read: ([UInt8]) -> Body?,
        run: (String, Body, String?, String?) async throws -> StoredActivity
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard let body, Self.isPlain(request),
            let activityID = metadata.pathParameters["activityId"].map(String.init),
            ActivityID(rawValue: activityID) != nil
        else {
            return try await next(request, body, metadata)
        }
        let bytes = try await [UInt8](collecting: body, upTo: maximumRequestBodySize)
        guard let input = read(bytes) else {
            return try await next(request, HTTPBody(bytes), metadata)
        }
        let stored = try await run(
            activityID,
            input,
            request.headerFields[.ifMatch],
            request.headerFields[PlainHeaders.idempotencyKey]
        )
        var response = HTTPResponse(status: .ok)
        response.headerFields[.eTag] = EntityTag.of(stored)
        response.headerFields[.contentType] = "application/json; charset=utf-8"
        return (response, HTTPBody(stored.ownJSON))
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

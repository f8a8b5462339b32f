import ActivityLifecycle
import HTTPTypes
import OpenAPIRuntime

/// The hot operation, `updateActivity`, read and answered with Liveline's own JSON parser and
/// writer rather than the generated decoders and Foundation's coders, which cost about a fifth
/// of the server's CPU for each update.
///
/// openapi.yaml stays the contract: this middleware takes a request only when it is one the
/// generated code would read to the same input — a body `ActivityUpdate(ownJSON:)` reads, a
/// plain activity id, plain header values, JSON accepted — and hands every other request on to
/// the generated code unchanged, which reads it or refuses it as always. It runs innermost,
/// so authentication, strict JSON, header handling and problem responses apply as for any
/// operation. The same handler runs either way (`LivelineAPI.update`); tests check that both
/// paths read the same input and write the same JSON.
struct OwnJSONOperations: ServerMiddleware {
    let api: LivelineAPI

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        metadata: ServerRequestMetadata,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard operationID == Operations.UpdateActivity.id, let body, Self.isPlain(request),
            let activityID = metadata.pathParameters["activityId"].map(String.init),
            ActivityID(rawValue: activityID) != nil
        else {
            return try await next(request, body, metadata)
        }
        let bytes = try await [UInt8](collecting: body, upTo: maximumRequestBodySize)
        guard let update = Components.Schemas.ActivityUpdate(ownJSON: bytes) else {
            return try await next(request, HTTPBody(bytes), metadata)
        }
        let stored = try await api.update(
            activityID,
            with: update,
            ifMatch: request.headerFields[.ifMatch],
            idempotencyKey: request.headerFields[PlainHeaders.idempotencyKey]
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

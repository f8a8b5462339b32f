import ActivityLifecycle
import CanonicalJSON
import HTTPTypes
import OpenAPIRuntime

/// Checks every JSON body with Liveline's strict parser (building nothing) before the generated
/// decoders see it: they tolerate trailing commas and the like, and say little about where JSON
/// goes wrong. A body that is not strict JSON (RFC 8259, nesting at most 256 deep, finite
/// numbers, each key once per object) is refused `malformed_json` with the byte offset and what
/// was expected there.
struct StrictJSONBodies: ServerMiddleware {
    let maximumBodySize: Int

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        metadata: ServerRequestMetadata,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard let body, Self.isJSON(request.headerFields[.contentType]) else {
            return try await next(request, body, metadata)
        }
        let bytes = try await [UInt8](collecting: body, upTo: maximumBodySize)
        guard !bytes.isEmpty else {
            // No body at all: fine for operations that take none; the others say it is missing.
            return try await next(request, nil, metadata)
        }
        do {
            try JSONParser.validate(bytes, refusingRepeatedKeys: true)
        } catch {
            throw Problem.malformedJSON(error.description)
        }
        return try await next(request, HTTPBody(bytes), metadata)
    }

    private static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.prefix { $0 != ";" }.trimmingHTTPWhitespace
        return mediaType.equalsIgnoringASCIICase("application/json") || mediaType.hasSuffixIgnoringASCIICase("+json")
    }
}

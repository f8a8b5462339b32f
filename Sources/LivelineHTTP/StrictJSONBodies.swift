import ActivityLifecycle
import CanonicalJSON
import HTTPTypes
import OpenAPIRuntime

/// Checks every JSON body with Liveline's strict parser (building nothing) before the generated
/// decoders see it: they tolerate trailing commas and the like, and say little about where JSON
/// goes wrong. A body that is not strict JSON (RFC 8259, nesting at most 256 deep, finite
/// numbers, each key once per object) is refused `malformed_json` with the byte offset and what
/// was expected there. `null` is refused where the document's schemas take none (everywhere but
/// inside free-form JSON), rather than read as a field left out.
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
        try Self.refuseNulls(in: bytes, bytes.indices, at: "")
        return try await next(request, HTTPBody(bytes), metadata)
    }

    /// The members whose values are free-form JSON (`JSONObject` in the document), where `null`
    /// is data like any other value.
    static let freeFormMembers: Set<String> = ["attributes", "contentState", "data", "details"]

    /// Refuses `null` as the value of a member of the object in `bytes[range]` (valid JSON) or
    /// of an object within it, outside free-form members: no field of the document takes `null`,
    /// and the generated decoders would read it as a field left out.
    private static func refuseNulls(in bytes: [UInt8], _ range: Range<Int>, at path: String) throws {
        guard bytes[range].first(where: { !JSONParser.isWhitespace($0) }) == UInt8(ascii: "{") else { return }
        for member in try JSONParser.members(of: bytes, in: range) {
            let key = member.key(in: bytes)
            guard !freeFormMembers.contains(key) else { continue }
            switch bytes[member.value.lowerBound] {
            case UInt8(ascii: "n"):
                let field = BodyObject.pointer(path, key)
                throw Problem.invalidRequest("The field \(field) must not be null; leave it out instead.", field: field)
            case UInt8(ascii: "{"):
                try refuseNulls(in: bytes, member.value, at: BodyObject.pointer(path, key))
            default:
                continue
            }
        }
    }

    /// Whether the media type is JSON: `application/json` or a structured `+json` type.
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = contentType.prefix { $0 != ";" }.trimmingHTTPWhitespace
        return mediaType.equalsIgnoringASCIICase("application/json") || mediaType.hasSuffixIgnoringASCIICase("+json")
    }
}

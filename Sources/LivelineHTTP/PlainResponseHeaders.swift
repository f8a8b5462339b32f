import HTTPTypes
import OpenAPIRuntime

/// The generated code writes string headers in URI style, percent-encoding `"` and `/`; `ETag`
/// and `Location` are sent as HTTP defines them instead: `"3"`, `/v1/activities/a1`.
///
/// This cannot be left to the generator: swift-openapi-generator 1.x encodes every header
/// parameter with its URI coder (OpenAPI's `simple` style), and has no option or type override
/// that sends a header's text as it is.
struct PlainResponseHeaders: ServerMiddleware {
    static let fields: [HTTPField.Name] = [.eTag, .location]

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        metadata: ServerRequestMetadata,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var (response, responseBody) = try await next(request, body, metadata)
        for name in Self.fields {
            if let value = response.headerFields[name], let plain = value.removingPercentEscapes {
                response.headerFields[name] = plain
            }
        }
        return (response, responseBody)
    }
}

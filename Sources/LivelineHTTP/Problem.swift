import ActivityLifecycle
public import CanonicalJSON
public import HTTPTypes
public import Hummingbird
public import OpenAPIRuntime

/// An error answered as `application/problem+json` (RFC 9457), with Liveline's stable `code`.
///
/// Handlers and middleware throw it; both the generated OpenAPI server (`HTTPResponseConvertible`)
/// and Hummingbird (`HTTPResponseError`) turn it into the same response.
public struct Problem: Error, Hashable, Sendable, CustomStringConvertible {
    public let status: HTTPResponse.Status
    /// The stable machine-readable code, e.g. `activity_ended`.
    public let code: String
    /// What happened and what to do, for a person.
    public let detail: String
    /// What a program needs to act: which cap and its limit, a measured size, versions, …
    public let details: [String: JSONValue]
    /// Headers the problem adds, such as `Retry-After` or `WWW-Authenticate`.
    public let headers: HTTPFields

    public init(
        _ status: HTTPResponse.Status,
        code: String,
        detail: String,
        details: [String: JSONValue] = [:],
        headers: HTTPFields = [:]
    ) {
        self.status = status
        self.code = code
        self.detail = detail
        self.details = details
        self.headers = headers
    }

    public var description: String { "\(status.code) \(code): \(detail)" }

    /// The body: type, title, status, detail, code and, when there are any, details.
    var body: [UInt8] {
        var members: [String: JSONValue] = [
            "type": .string("https://liveline.dev/problems/\(code)"),
            "title": .string(status.reasonPhrase),
            "status": .number(JSONNumber(status.code)),
            "detail": .string(detail),
            "code": .string(code),
        ]
        if !details.isEmpty {
            members["details"] = .object(details)
        }
        return JSONValue.object(members).canonicalJSON
    }

    var headerFields: HTTPFields {
        var fields = headers
        fields[.contentType] = "application/problem+json"
        return fields
    }
}

extension Problem: HTTPResponseConvertible {
    public var httpStatus: HTTPResponse.Status { status }
    public var httpHeaderFields: HTTPFields { headerFields }
    public var httpBody: HTTPBody? { HTTPBody(body) }
}

extension Problem: HTTPResponseError {
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Response(status: status, headers: headerFields, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}

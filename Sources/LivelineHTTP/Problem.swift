import Foundation
public import Hummingbird

/// An error answered as `application/problem+json` (RFC 9457), with Liveline's stable `code`.
public struct Problem: Error, HTTPResponseError, Sendable {
    public let status: HTTPResponse.Status
    /// The stable machine-readable code, e.g. `activity_ended`.
    public let code: String
    /// What happened and what to do, for a person.
    public let detail: String

    public init(status: HTTPResponse.Status, code: String, detail: String) {
        self.status = status
        self.code = code
        self.detail = detail
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = Body(
            type: "https://liveline.dev/problems/\(code.replacingOccurrences(of: "_", with: "-"))",
            title: status.reasonPhrase,
            status: status.code,
            detail: detail,
            code: code
        )
        let data = try JSONEncoder().encode(body)
        return Response(
            status: status,
            headers: [.contentType: "application/problem+json"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data))
        )
    }

    private struct Body: Encodable {
        let type: String
        let title: String
        let status: Int
        let detail: String
        let code: String
    }
}

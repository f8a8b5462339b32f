import HTTPTypes
import Hummingbird
import Tracing

/// A span per request (kind server), continuing the caller's W3C `traceparent`, named by its route
/// once matched, with its method, path, route and status; an answer of 500 or more is an error.
/// It holds the handler's work (a streamed body goes on after it ends).
///
/// Hummingbird's `TracingMiddleware` would do, but it fills in the attributes of every span, and
/// wraps every body to end the span after the body is written, sampled or not; with 1 request in
/// 100 sampled that is work for nothing 99 times in 100. Here a span that records nothing costs
/// its creation and the context it hands on, so that what the request does is left out of the
/// trace too.
struct RequestTracing<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var caller = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &caller, using: HeaderExtractor())
        let span = InstrumentationSystem.tracer.startSpan(
            "HTTP \(request.method.rawValue)",
            context: caller,
            ofKind: .server
        )
        defer { span.end() }
        guard span.isRecording else {
            return try await ServiceContext.$current.withValue(span.context) { try await next(request, context) }
        }
        span.updateAttributes { attributes in
            attributes["http.request.method"] = request.method.rawValue
            attributes["url.path"] = request.uri.path
        }
        do {
            let response = try await ServiceContext.$current.withValue(span.context) {
                try await next(request, context)
            }
            describe(span, context, status: Int(response.status.code))
            return response
        } catch {
            describe(span, context, status: Int((error as? any HTTPResponseError)?.status.code ?? 500))
            span.recordError(error)
            throw error
        }
    }

    private func describe(_ span: any Span, _ context: Context, status: Int) {
        if let route = context.endpointPath {
            span.operationName = "\(span.operationName.split(separator: " ").first ?? "HTTP") \(route)"
            span.attributes["http.route"] = route
        }
        span.attributes["http.response.status_code"] = status
        if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
    }

    private struct HeaderExtractor: Extractor {
        func extract(key: String, from headers: HTTPFields) -> String? {
            HTTPField.Name(key).flatMap { headers[$0] }
        }
    }
}

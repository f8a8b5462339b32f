import HTTPTypes
import Hummingbird

/// Reads each request body up to `maximumBodySize` before routing; a larger one is refused 413
/// without being read further.
struct BodySizeLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    let maximumBodySize: Int

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws
        -> Response
    {
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maximumBodySize {
            throw Problem.requestTooLarge(limit: maximumBodySize)
        }
        var request = request
        do {
            _ = try await request.collectBody(upTo: maximumBodySize)
        } catch let error as HTTPError where error.status == .contentTooLarge {
            throw Problem.requestTooLarge(limit: maximumBodySize)
        }
        return try await next(request, context)
    }
}

/// Answers Hummingbird's own errors — chiefly an unknown route — as problems too: a path the API
/// has, asked with a method it does not take, is `405` with `Allow`; any other is `404`.
struct RouterProblemMiddleware<Context: RequestContext>: RouterMiddleware {
    let allowedMethods: AllowedMethods

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            switch error.status {
            case .notFound, .methodNotAllowed:
                let path = request.uri.path
                if let allowed = allowedMethods.methods(forPath: path) {
                    throw Problem.methodNotAllowed(request.method, path, allowed: allowed)
                }
                throw Problem.routeNotFound(request.method, path)
            default:
                throw Problem(
                    error.status,
                    code: "invalid_request",
                    detail: error.body ?? "The request could not be handled: \(error.status.reasonPhrase)."
                )
            }
        }
    }
}

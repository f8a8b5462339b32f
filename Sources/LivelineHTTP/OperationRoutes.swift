import HTTPTypes
import Hummingbird
import OpenAPIHummingbird
import OpenAPIRuntime

/// The operations of openapi.yaml as the generated code registers them, held until they are put
/// on the router, so that what the router does for a request no operation takes can be built
/// from them first: a known path with a method it does not take is `405` with `Allow`.
final class OperationRoutes: ServerTransport {
    typealias Handler =
        @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)

    private var operations: [(handler: Handler, method: HTTPRequest.Method, path: String)] = []

    func register(_ handler: @escaping Handler, method: HTTPRequest.Method, path: String) {
        operations.append((handler, method, path))
    }

    /// The path and method of each registered operation.
    var registered: [(path: String, method: HTTPRequest.Method)] {
        operations.map { ($0.path, $0.method) }
    }

    /// Puts every registered operation on `router`.
    func register<Context: RequestContext>(on router: Router<Context>) {
        for operation in operations {
            router.register(operation.handler, method: operation.method, path: operation.path)
        }
    }
}

/// Which methods each path of the API takes, for answering a method a path does not take.
struct AllowedMethods: Sendable {
    /// Each path template (`/v1/activities/{activityId}`) as its segments, with its methods.
    private let routes: [(segments: [Substring], methods: [HTTPRequest.Method])]

    init(_ operations: [(path: String, method: HTTPRequest.Method)]) {
        var routes: [(segments: [Substring], methods: [HTTPRequest.Method])] = []
        for (path, method) in operations {
            let segments = path.split(separator: "/")
            if let index = routes.firstIndex(where: { $0.segments == segments }) {
                routes[index].methods.append(method)
            } else {
                routes.append((segments, [method]))
            }
        }
        self.routes = routes
    }

    /// The methods `path` takes, in the order the document lists them; `nil` when no operation has
    /// that path. A template's `{parameter}` segment matches any segment.
    func methods(forPath path: String) -> [HTTPRequest.Method]? {
        let segments = path.split(separator: "/")
        return routes.first { route in
            route.segments.count == segments.count
                && zip(route.segments, segments).allSatisfy { template, segment in
                    template == segment || (template.first == "{" && template.last == "}")
                }
        }?.methods
    }
}

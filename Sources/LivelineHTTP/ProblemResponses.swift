import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventStore
import Foundation
import HTTPTypes
import Logging
import OpenAPIRuntime

/// The outermost OpenAPI middleware (and the write routes' answer to their errors): answers
/// every error of an operation — bad input found by the generated decoders, refusals of the
/// handlers, failures of the database — with a problem.
/// An error it does not know is logged and answered 500 without its internals. A request
/// refused because the database cannot be reached is counted in the outage, which is logged
/// once, not once per request; one refused because the log has no partition for now, in a
/// line a minute at most.
struct ProblemResponses: ServerMiddleware {
    let logger: Logger
    let store: EventStore
    private let missingPartitions: RefusalLog

    init(logger: Logger, store: EventStore) {
        self.logger = logger
        self.store = store
        self.missingPartitions = RefusalLog(
            logger: logger,
            message: "requests are refused: the log has no partition for now (the partitions ahead ran out)"
        )
    }

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        metadata: ServerRequestMetadata,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        do {
            return try await next(request, body, metadata)
        } catch {
            let problem = problem(for: error, request: request, operationID: operationID)
            return (HTTPResponse(status: problem.status, headerFields: problem.headerFields), problem.httpBody)
        }
    }

    /// The problem that answers `error`, thrown while serving `operationID`.
    func problem(for error: any Error, request: HTTPRequest, operationID: String) -> Problem {
        let serverError = error as? ServerError
        let cause = serverError?.underlyingError ?? error
        switch cause {
        case let problem as Problem:
            return problem
        case let decoding as DecodingError:
            return Self.problem(for: decoding)
        case EventStoreError.databaseUnavailable(let failure):
            store.refusedWhileUnreachable(failure.details)
            return .databaseUnavailable
        case EventStoreError.logPartitionMissing(let table, let failure):
            missingPartitions.refused(failure.details)
            return .logPartitionMissing(table)
        case let storeError as EventStoreError:
            if let problem = Problem(storeError) { return problem }
        case let channelError as ChannelManagementError:
            return Problem(channelError)
        case let runtimeError as any HTTPResponseConvertible
        where serverError != nil && runtimeError.httpStatus.kind == .clientError:
            // The OpenAPI runtime's own errors (its error type is internal) say through the public
            // `HTTPResponseConvertible` what status they call for: each is about the request (a
            // content type, a missing body, a parameter that does not parse).
            return Self.problem(
                forRuntimeStatus: runtimeError.httpStatus,
                cause: serverError?.causeDescription ?? "",
                request: request
            )
        default:
            break
        }
        logger.error(
            "request failed",
            metadata: ["operation": "\(operationID)", "error": "\(String(reflecting: cause))"]
        )
        return .internalError
    }

    private static func problem(
        forRuntimeStatus status: HTTPResponse.Status,
        cause: String,
        request: HTTPRequest
    )
        -> Problem
    {
        switch status {
        case .unsupportedMediaType: .unsupportedMediaType(request.headerFields[.contentType])
        case .notAcceptable: .notAcceptable(request.headerFields[.accept])
        default: .invalidRequest(cause)
        }
    }

    /// Says what is wrong with a body (or a parameter) and where, as a JSON pointer.
    static func problem(for error: DecodingError) -> Problem {
        switch error {
        case .keyNotFound(let key, let context):
            let field = pointer(context.codingPath + [key])
            return .invalidRequest("The field \(field) is required.", field: field)
        case .valueNotFound(_, let context):
            let field = pointer(context.codingPath)
            return .invalidRequest("The field \(field) must not be null.", field: field)
        case .typeMismatch(let type, let context):
            let field = pointer(context.codingPath)
            return .invalidRequest("The field \(field) must be \(describe(type)).", field: field)
        case .dataCorrupted(let context) where context.codingPath.isEmpty:
            // Bodies are strict JSON by now (`StrictJSONBodies`): this is a parameter or value.
            return .invalidRequest("The request is invalid: \(reason(context))")
        case .dataCorrupted(let context):
            let field = pointer(context.codingPath)
            if context.debugDescription.hasPrefix("Additional properties are disabled") {
                return .invalidRequest(
                    "Unknown field \(field); the fields each operation takes are listed in /openapi.yaml.",
                    field: field
                )
            }
            return .invalidRequest("The field \(field) is invalid: \(reason(context))", field: field)
        @unknown default:
            return .invalidRequest("The body does not match the operation's schema.")
        }
    }

    private static func reason(_ context: DecodingError.Context) -> String {
        if let underlying = context.underlyingError as? NSError,
            let description = underlying.userInfo[NSDebugDescriptionErrorKey] as? String
        {
            return description
        }
        return context.debugDescription
    }

    private static func pointer(_ path: [any CodingKey]) -> String {
        "/" + path.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: "/")
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "true or false"
        case is Int.Type, is Int64.Type, is Int32.Type: "an integer"
        case is Double.Type, is Float.Type: "a number"
        case is [String: JSONValue].Type, is JSONObject.Type: "an object"
        default:
            if String(describing: type).hasPrefix("Array") {
                "an array"
            } else if String(describing: type).hasPrefix("Dictionary") {
                "an object"
            } else {
                "of another type"
            }
        }
    }
}

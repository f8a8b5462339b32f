import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import HTTPTypes
import OpenAPIRuntime
import Synchronization

/// Who is calling, as established by `AuthenticationMiddleware` for the operation's duration.
enum Caller: Sendable {
    case app(AppID)
    case admin
    case anonymous

    @TaskLocal static var current: Caller = .anonymous

    /// The calling app; the middleware lets only app keys reach activity and event operations.
    static func app() throws -> AppID {
        guard case .app(let app) = current else { throw Problem.forbidden("This route takes an app's key.") }
        return app
    }
}

/// Recognises keys: the admin key from configuration, and apps' keys from the database, whose
/// holders it remembers for a few seconds so that most requests skip the look-up.
final class Authenticator: Sendable {
    /// How long a key found in the database is trusted without looking again: a key revoked by
    /// another process stops working within this time (at once in the revoking process).
    static let memoryLifetime: Duration = .seconds(5)

    private let store: EventStore
    private let adminKey: AdminKey?
    private let remembered = Mutex<[String: (holder: KeyHolder, until: ContinuousClock.Instant)]>([:])

    init(store: EventStore, adminKey: String?) {
        self.store = store
        self.adminKey = adminKey.map(AdminKey.init)
    }

    var acceptsAdminKey: Bool { adminKey != nil }

    func isAdminKey(_ key: String) -> Bool {
        adminKey?.matches(key) ?? false
    }

    /// The app holding this key, unless it is unknown or revoked.
    func holder(of key: String) async throws -> KeyHolder? {
        let now = ContinuousClock.now
        if let entry = remembered.withLock({ $0[key] }), entry.until > now {
            return entry.holder
        }
        guard let holder = try await store.keyHolder(secret: key) else {
            remembered.withLock { _ = $0.removeValue(forKey: key) }
            return nil
        }
        remembered.withLock { $0[key] = (holder, now + Self.memoryLifetime) }
        return holder
    }

    /// Stops trusting a revoked key at once.
    func forget(_ keyID: UUID) {
        remembered.withLock { entries in entries = entries.filter { $0.value.holder.keyID != keyID } }
    }

    /// Who presents the request's `Authorization: Bearer <key>`: the admin on the admin API (every
    /// path under `/v1/admin`, so that a route added there can never be reached with an app's
    /// key), an app on the others; refused otherwise.
    func caller(of request: HTTPRequest) async throws -> Caller {
        try await caller(presenting: try Self.bearerKey(of: request), onAdminAPI: Self.isAdminAPI(request))
    }

    /// Whether the request is for the admin API: its path is `/v1/admin` or below.
    static func isAdminAPI(_ request: HTTPRequest) -> Bool {
        guard let path = request.path?.split(separator: "?", maxSplits: 1).first else { return false }
        return path == "/v1/admin" || path.hasPrefix("/v1/admin/")
    }

    private func caller(presenting key: String, onAdminAPI: Bool) async throws -> Caller {
        if onAdminAPI {
            guard acceptsAdminKey else {
                throw Problem.unauthorized("The admin API is disabled: start the server with LIVELINE_ADMIN_KEY set.")
            }
            if isAdminKey(key) { return .admin }
            if try await holder(of: key) != nil {
                throw Problem.forbidden("This route takes the admin key; an app's key only reaches its activities.")
            }
            throw Problem.unauthorized("The key is not the admin key.")
        }
        if let holder = try await holder(of: key) { return .app(holder.app) }
        if isAdminKey(key) {
            throw Problem.forbidden("This route takes an app's key; the admin key manages apps and their keys.")
        }
        throw Problem.unauthorized("The key is unknown or revoked.")
    }

    private static func bearerKey(of request: HTTPRequest) throws -> String {
        guard let authorization = request.headerFields[.authorization] else {
            throw Problem.unauthorized("Send the key as Authorization: Bearer <key>.")
        }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].equalsIgnoringASCIICase("bearer") else {
            throw Problem.unauthorized("The Authorization header must be Bearer <key>.")
        }
        return String(parts[1].trimmingHTTPWhitespace)
    }
}

/// Requires `Authorization: Bearer <key>` (`Authenticator.caller(of:)`) of every operation but
/// those that serve monitoring, which are open.
struct AuthenticationMiddleware: ServerMiddleware {
    let authenticator: Authenticator

    static let openOperations: Set<String> = [
        Operations.GetHealth.id, Operations.GetReadiness.id, Operations.GetMetrics.id,
        Operations.GetOpenAPIDocument.id,
    ]

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        metadata: ServerRequestMetadata,
        operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, ServerRequestMetadata) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        if Self.openOperations.contains(operationID) {
            return try await next(request, body, metadata)
        }
        let caller = try await authenticator.caller(of: request)
        return try await Caller.$current.withValue(caller) { try await next(request, body, metadata) }
    }
}

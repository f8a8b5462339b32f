public import CanonicalJSON
public import EventStore
public import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
public import ServiceLifecycle

/// Sends pushes, broadcasts and channel requests to APNs over HTTP/2 and TLS.
///
/// One long-lived connection per credentials (team, key id and the key itself: APNs takes one
/// team per connection) and host, opened when first needed and again when it closes or APNs
/// sends GOAWAY; one provider token per credentials, reused until it is 50 minutes old. A new
/// key under the same key id (a corrected `.p8`) is other credentials: its first push mints a
/// token with it, on a connection of its own. Every request has a deadline. How many are in
/// flight is the caller's bound (the delivery worker's).
public final class APNsClient: Service, Sendable {
    /// Where a connection goes, and for whom: APNs takes one team per connection, and a
    /// provider token is signed by one key.
    private struct Route: Hashable {
        let teamID: String
        let keyID: String
        let publicKeySHA256: [UInt8]
        let endpoint: APNsConnection.Endpoint
    }

    /// A route's connection, or the opening of one.
    private enum Link {
        case opening(Task<APNsConnection, any Error>)
        case open(APNsConnection)
    }

    /// A route's connection and provider token.
    private struct RouteState {
        var link: Link?
        var token: ProviderToken?
    }

    private let configuration: APNsConfiguration
    private let endpoints: [APNsService: [APNsEnvironment: APNsConnection.Endpoint]]
    private let tls: NIOSSLContext
    private let group: any EventLoopGroup
    private let clock: @Sendable () -> Timestamp
    private let logger: Logger
    private let routes = NIOLockedValueBox<[Route: RouteState]>([:])

    /// - Parameter clock: for the provider tokens' `iat` and age.
    public init(
        configuration: APNsConfiguration,
        clock: @escaping @Sendable () -> Timestamp = Timestamp.now,
        logger: Logger
    ) throws {
        self.configuration = configuration
        var endpoints: [APNsService: [APNsEnvironment: APNsConnection.Endpoint]] = [:]
        for service in APNsService.allCases {
            for environment in [APNsEnvironment.production, .sandbox] {
                let url = configuration.baseURL(of: service, in: environment)
                guard let endpoint = APNsConnection.Endpoint(url: url) else {
                    throw APNsConfiguration.InvalidURL(url: url)
                }
                endpoints[service, default: [:]][environment] = endpoint
            }
        }
        self.endpoints = endpoints
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        tls.applicationProtocols = ["h2"]
        if let pem = configuration.trustedCertificatePEM {
            tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))]
        }
        self.tls = try NIOSSLContext(configuration: tls)
        self.group = MultiThreadedEventLoopGroup.singleton
        self.clock = clock
        self.logger = logger
    }

    /// Sends `pushes` (each a push to a device, or a broadcast, with its app's credentials), the
    /// requests of each connection handed over and flushed together, and calls `answered` with a
    /// push's index and what APNs answered (or that it did not), once per push, as the answers
    /// come: on a connection's event loop (or at once, when the push cannot go), so it must
    /// not block.
    public func send(
        _ pushes: [(request: APNsRequest, credentials: APNsCredentials)],
        answered: @escaping @Sendable (Int, APNsResponse) -> Void
    ) {
        var byRoute: [Route: [Int]] = [:]
        for (index, push) in pushes.enumerated() {
            byRoute[route(of: push.request.service, push.credentials), default: []].append(index)
        }
        for (route, indices) in byRoute {
            let credentials = pushes[indices[0]].credentials
            dispatch(
                indices.map { index in
                    let request = pushes[index].request
                    return Exchange(
                        method: "POST",
                        path: request.path,
                        headers: request.headers + [("content-type", "application/json")],
                        body: request.body
                    ) { result in
                        let response = APNsResponse(result)
                        if case .retry(renewToken: true) = APNsVerdict(response) {
                            _ = try? self.connection(for: route, credentials: credentials, renewing: true)
                        }
                        answered(index, response)
                    }
                },
                on: route,
                with: credentials
            )
        }
    }

    /// Sends `request` with `credentials` and says what APNs answered (or that it did not).
    public func send(_ request: APNsRequest, with credentials: APNsCredentials) async -> APNsResponse {
        await withCheckedContinuation { continuation in
            send([(request, credentials)]) { _, response in continuation.resume(returning: response) }
        }
    }

    /// One request to `service` with `credentials`' provider token, and APNs' answer.
    func exchange(
        _ method: String,
        _ path: String,
        headers: [(name: String, value: String)],
        body: [UInt8],
        on service: APNsService,
        with credentials: APNsCredentials
    ) async -> Result<APNsAnswer, APNsUnanswered> {
        await withCheckedContinuation { continuation in
            dispatch(
                [
                    Exchange(method: method, path: path, headers: headers, body: body) {
                        continuation.resume(returning: $0)
                    }
                ],
                on: route(of: service, credentials),
                with: credentials
            )
        }
    }

    /// A request to send on a route, and what is done with its answer.
    private struct Exchange {
        let method: String
        let path: String
        let headers: [(name: String, value: String)]
        let body: [UInt8]
        let answered: @Sendable (Result<APNsAnswer, APNsUnanswered>) -> Void
    }

    /// Hands `exchanges` to the route's connection with its provider token (once the connection
    /// is open), or answers them `unanswered` when no token can be signed or no connection opened.
    private func dispatch(_ exchanges: [Exchange], on route: Route, with credentials: APNsCredentials) {
        let (link, jwt): (Link, String)
        do {
            (link, jwt) = try connection(for: route, credentials: credentials, renewing: false)
        } catch {
            for exchange in exchanges {
                exchange.answered(.failure(APNsUnanswered("could not sign a provider token: \(error)")))
            }
            return
        }
        let requests = exchanges.map { exchange in
            var headers = HPACKHeaders()
            headers.reserveCapacity(exchange.headers.count + 6)
            headers.add(name: ":method", value: exchange.method)
            headers.add(name: ":scheme", value: "https")
            // What differs from push to push is not kept in HPACK's table (it would only push out
            // what repeats: the token, the topic, the authority).
            headers.add(name: ":path", value: exchange.path, indexing: .nonIndexable)
            headers.add(name: ":authority", value: route.endpoint.authority)
            headers.add(name: "authorization", value: "bearer " + jwt)
            for (name, value) in exchange.headers {
                headers.add(name: name, value: value, indexing: Self.differsPerPush(name) ? .nonIndexable : .indexable)
            }
            if !exchange.body.isEmpty || exchange.method == "POST" {
                headers.add(name: "content-length", value: String(exchange.body.count))
            }
            return APNsConnection.Outgoing(
                headers: headers,
                body: ByteBuffer(bytes: exchange.body),
                answered: exchange.answered
            )
        }
        switch link {
        case .open(let connection):
            connection.send(requests)
        case .opening(let opening):
            Task {
                let result = await opening.result
                settle(route, opening, result)
                switch result {
                case .success(let connection):
                    connection.send(requests)
                case .failure(let error):
                    let why = "could not connect to APNs at \(route.endpoint.authority): \(error)"
                    for request in requests { request.answered(.failure(APNsUnanswered(why))) }
                }
            }
        }
    }

    /// Headers whose value is new with nearly every push.
    private static func differsPerPush(_ name: String) -> Bool {
        name == "apns-id" || name == "apns-request-id" || name == "apns-expiration"
    }

    private func route(of service: APNsService, _ credentials: APNsCredentials) -> Route {
        Route(
            teamID: credentials.teamID,
            keyID: credentials.keyID,
            publicKeySHA256: credentials.publicKeySHA256,
            endpoint: endpoints[service]![credentials.environment]!
        )
    }

    /// The route's connection (opening one when there is none, or when it takes no new
    /// streams) and current provider token, minting a token when there is none, when it is
    /// due, or (`renewing`) when APNs called it expired and it is old enough.
    private func connection(
        for route: Route,
        credentials: APNsCredentials,
        renewing: Bool
    ) throws -> (Link, String) {
        let now = clock()
        return try routes.withLockedValue { routes in
            var state = routes[route] ?? RouteState()
            if state.token.map({ $0.isDue(at: now) || (renewing && $0.mayBeReplaced(at: now)) }) ?? true {
                state.token = try ProviderToken(credentials: credentials, now: now)
                logger.debug(
                    "minted an APNs provider token",
                    metadata: ["apns.team": "\(route.teamID)", "apns.key": "\(route.keyID)"]
                )
            }
            switch state.link {
            case .opening:
                break
            case .open(let connection) where connection.isUsable:
                break
            case .open, nil:
                let (endpoint, tls, group, connectTimeout, requestTimeout) = (
                    route.endpoint, self.tls, self.group, configuration.connectTimeout, configuration.requestTimeout
                )
                state.link = .opening(
                    Task {
                        try await APNsConnection.connect(
                            to: endpoint,
                            tls: tls,
                            group: group,
                            connectTimeout: connectTimeout,
                            requestTimeout: requestTimeout
                        )
                    }
                )
            }
            routes[route] = state
            return (state.link!, state.token!.jwt)
        }
    }

    /// Keeps the connection an opening gave (or forgets a failed opening, so that the next push
    /// tries again).
    private func settle(
        _ route: Route,
        _ opening: Task<APNsConnection, any Error>,
        _ result: Result<APNsConnection, any Error>
    ) {
        routes.withLockedValue { routes in
            guard case .opening(let current)? = routes[route]?.link, current == opening else { return }
            routes[route]?.link = try? .open(result.get())
        }
    }

    /// Keeps the connections until graceful shutdown, then closes them: run it as a `Service`
    /// that stops after the workers that send with it.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Closes every connection.
    public func shutdown() async throws {
        let links = routes.withLockedValue { routes in
            defer { routes.removeAll() }
            return routes.values.compactMap(\.link)
        }
        for link in links {
            switch link {
            case .open(let connection): await connection.close()
            case .opening(let opening): await (try? opening.value)?.close()
            }
        }
    }
}

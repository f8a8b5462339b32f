import AsyncHTTPClient
public import CanonicalJSON
public import EventStore
public import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOSSL
public import ServiceLifecycle

/// Sends pushes to APNs over HTTP/2 and TLS.
///
/// One `HTTPClient` (its own pool of long-lived HTTP/2 connections, so one team per connection)
/// and one provider token per credentials (team, key, environment); the token is reused until
/// it is 50 minutes old. Every request has a deadline. How many are in flight is the caller's
/// bound (the delivery worker's).
public final class APNsClient: Service, Sendable {
    private struct Route: Hashable {
        let teamID: String
        let keyID: String
        let environment: APNsEnvironment
    }

    private struct Connection {
        let http: HTTPClient
        var token: ProviderToken?
    }

    private let configuration: APNsConfiguration
    private let tls: TLSConfiguration
    private let clock: @Sendable () -> Timestamp
    private let logger: Logger
    private let connections = NIOLockedValueBox<[Route: Connection]>([:])

    /// - Parameter clock: for the provider tokens' `iat` and age.
    public init(
        configuration: APNsConfiguration,
        clock: @escaping @Sendable () -> Timestamp = Timestamp.now,
        logger: Logger
    ) throws {
        self.configuration = configuration
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let pem = configuration.trustedCertificatePEM {
            tls.additionalTrustRoots = [.certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))]
        }
        self.tls = tls
        self.clock = clock
        self.logger = logger
    }

    /// Sends `request` with `credentials`, and says what APNs answered (or that it did not).
    public func send(_ request: APNsRequest, with credentials: APNsCredentials) async -> APNsResponse {
        let route = Route(teamID: credentials.teamID, keyID: credentials.keyID, environment: credentials.environment)
        let (http, jwt): (HTTPClient, String)
        do {
            (http, jwt) = try connection(for: route, credentials: credentials, renewing: false)
        } catch {
            return .unanswered("could not sign a provider token: \(error)")
        }
        var outgoing = HTTPClientRequest(url: configuration.baseURL(of: credentials.environment) + request.path)
        outgoing.method = .POST
        outgoing.headers.add(name: "authorization", value: "bearer " + jwt)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        outgoing.headers.add(name: "content-type", value: "application/json")
        outgoing.body = .bytes(ByteBuffer(bytes: request.body))
        do {
            let response = try await http.execute(
                outgoing,
                timeout: .microseconds(configuration.requestTimeout.microseconds),
                logger: logger
            )
            let body = try await response.body.collect(upTo: 64 * 1024)
            let answer = APNsResponse.answer(
                status: Int(response.status.code),
                body: Array(buffer: body),
                apnsID: response.headers.first(name: "apns-id")
            )
            if case .retry(renewToken: true) = APNsVerdict(answer) {
                _ = try? connection(for: route, credentials: credentials, renewing: true)
            }
            return answer
        } catch {
            return .unanswered(String(describing: error))
        }
    }

    /// The route's HTTP client and current provider token, minting a token when there is none,
    /// when it is due, or (`renewing`) when APNs called it expired and it is old enough.
    private func connection(
        for route: Route,
        credentials: APNsCredentials,
        renewing: Bool
    ) throws -> (HTTPClient, String) {
        let now = clock()
        return try connections.withLockedValue { connections in
            var connection =
                connections[route]
                ?? Connection(
                    http: HTTPClient(
                        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
                        configuration: httpConfiguration(),
                        backgroundActivityLogger: logger
                    ),
                    token: nil
                )
            if let token = connection.token,
                !token.isDue(at: now) && !(renewing && token.mayBeReplaced(at: now))
            {
                connections[route] = connection
                return (connection.http, token.jwt)
            }
            let token = try ProviderToken(credentials: credentials, now: now)
            connection.token = token
            connections[route] = connection
            logger.debug(
                "minted an APNs provider token",
                metadata: ["apns.team": "\(route.teamID)", "apns.key": "\(route.keyID)"]
            )
            return (connection.http, token.jwt)
        }
    }

    private func httpConfiguration() -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            timeout: .init(connect: .seconds(10))
        )
        configuration.httpVersion = .automatic
        // Apple may take rapid reconnects for abuse: keep connections for an hour of quiet.
        configuration.connectionPool.idleTimeout = .seconds(3600)
        return configuration
    }

    /// Keeps the connections until graceful shutdown, then closes them: run it as a `Service`
    /// that stops after the workers that send with it.
    public func run() async throws {
        try? await gracefulShutdown()
        try await shutdown()
    }

    /// Closes every connection.
    public func shutdown() async throws {
        let clients = connections.withLockedValue { connections in
            defer { connections.removeAll() }
            return connections.values.map(\.http)
        }
        for client in clients { try await client.shutdown() }
    }
}

import ActivityLifecycle
import AsyncHTTPClient
import CanonicalJSON
import Crypto
import Delivery
import EventStore
import LocalAPNs
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOSSL

/// A local APNs on a free port with one team, key and app registered, a client of it, and one
/// clock both read (so tests can move time).
struct LocalAPNsFixture {
    static let teamID = "TEAM000001"
    static let keyID = "KEY0000001"
    static let bundleID = "com.example.game"
    static let token = String(repeating: "ab", count: 32)

    let server: LocalAPNs
    let client: APNsClient
    let credentials: APNsCredentials
    let clock: TestClock

    /// Runs `body` with a fresh fixture and shuts it down after.
    static func run(
        requestTimeout: Duration = .seconds(5),
        keepingAccepted: Bool = true,
        onAccept: (@Sendable (LocalAPNs.Accepted) -> Void)? = nil,
        _ body: (LocalAPNsFixture) async throws -> Void
    ) async throws {
        let clock = TestClock()
        let server = try await LocalAPNs.start(
            clock: { clock.now.epochSeconds },
            keepingAccepted: keepingAccepted,
            onAccept: onAccept
        )
        let key = P256.Signing.PrivateKey()
        server.register(teamID: teamID, keyID: keyID, publicKey: key.publicKey, bundleID: bundleID)
        var configuration = APNsConfiguration.local(
            baseURL: server.baseURL,
            trustedCertificatePEM: server.certificatePEM
        )
        configuration.requestTimeout = requestTimeout
        let client = try APNsClient(configuration: configuration, clock: { clock.now }, logger: Logger(label: "test"))
        let fixture = LocalAPNsFixture(
            server: server,
            client: client,
            credentials: try makeCredentials(key: key),
            clock: clock
        )
        do {
            try await body(fixture)
        } catch {
            try? await client.shutdown()
            try? await server.shutdown()
            throw error
        }
        try await client.shutdown()
        try await server.shutdown()
    }

    /// The fixture's team and key, signing with `key`.
    static func makeCredentials(key: P256.Signing.PrivateKey) throws -> APNsCredentials {
        try APNsCredentials(teamID: teamID, keyID: keyID, environment: .sandbox, privateKeyPEM: key.pemRepresentation)
    }

    /// A push as the renderer makes them, to `token`.
    static func push(
        to token: String = token,
        priority: Priority = .high,
        body: String? = nil,
        apnsID: String? = nil
    )
        -> APNsRequest
    {
        APNsRequest(
            destination: .device(token: token),
            topic: PushRenderer.topic(for: bundleID),
            priority: priority,
            expiration: TestClock.start + .seconds(3600),
            apnsID: apnsID ?? "6f0b8e3a-1d2c-8e4f-9a5b-0c1d2e3f4a5b",
            body: Array(
                (body ?? #"{"aps":{"timestamp":1800000000,"event":"update","content-state":{"step":1}}}"#).utf8
            )
        )
    }

    /// A request sent as written, for the checks a correct client never trips: `headers` are
    /// added after a valid provider token (unless they name `authorization`).
    func raw(
        path: String = "/3/device/" + LocalAPNsFixture.token,
        method: HTTPMethod = .POST,
        headers: [(String, String)],
        body: String = #"{"aps":{"timestamp":1800000000,"event":"update","content-state":{}}}"#,
        on connection: HTTPClient? = nil
    ) async throws -> APNsResponse {
        let answer = try await rawAnswer(path: path, method: method, headers: headers, body: body, on: connection)
        return .answered(
            status: answer.status,
            reason: APNsResponse.reason(in: answer.body),
            tokenInvalidSince: nil,
            apnsID: answer.headers.first(name: "apns-id")
        )
    }

    /// `raw`'s request, answered with the status, headers and body as they came.
    func rawAnswer(
        path: String,
        method: HTTPMethod = .POST,
        headers: [(String, String)],
        body: String,
        on connection: HTTPClient? = nil
    ) async throws -> (status: Int, headers: HTTPHeaders, body: [UInt8]) {
        guard let connection else {
            let http = try rawConnection()
            do {
                let answer = try await rawAnswer(path: path, method: method, headers: headers, body: body, on: http)
                try await http.shutdown()
                return answer
            } catch {
                try? await http.shutdown()
                throw error
            }
        }
        var request = HTTPClientRequest(url: server.baseURL + path)
        request.method = method
        if !headers.contains(where: { $0.0 == "authorization" }) {
            let jwt = try ProviderToken(credentials: credentials, now: clock.now).jwt
            request.headers.add(name: "authorization", value: "bearer " + jwt)
        }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if !body.isEmpty { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await connection.execute(request, timeout: .seconds(5))
        let bytes = try await response.body.collect(upTo: 64 * 1024)
        return (Int(response.status.code), response.headers, Array(buffer: bytes))
    }

    /// An HTTP/2 client of the local APNs, for several `raw` requests on one connection.
    func rawConnection() throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [
            .certificates(try NIOSSLCertificate.fromPEMBytes(Array(server.certificatePEM.utf8)))
        ]
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(tlsConfiguration: tls))
    }

    /// The headers of a valid Live Activity push.
    static let validHeaders: [(String, String)] = [
        ("apns-push-type", "liveactivity"), ("apns-topic", bundleID + ".push-type.liveactivity"),
    ]
}

/// A clock that tests move by hand; it starts at `TestClock.start`.
final class TestClock: Sendable {
    static let start = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)
    private let time = NIOLockedValueBox(TestClock.start)

    var now: Timestamp { time.withLockedValue { $0 } }

    func advance(_ duration: Duration) {
        time.withLockedValue { $0 = $0 + duration }
    }
}

extension APNsResponse {
    static func reason(in body: [UInt8]) -> String? {
        guard case .object(let members)? = try? JSONParser.parse(body), case .string(let reason)? = members["reason"]
        else { return nil }
        return reason
    }

    var status: Int? {
        if case .answered(let status, _, _, _) = self { status } else { nil }
    }

    var reason: String? {
        if case .answered(_, let reason, _, _) = self { reason } else { nil }
    }
}

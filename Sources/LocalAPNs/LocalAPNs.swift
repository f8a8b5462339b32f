public import Crypto
public import Foundation
import HTTP2Window
public import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL

/// A local APNs for tests, benchmarks and `liveline dev`: HTTP/2 over TLS with a self-signed
/// certificate made at start-up, checking what Apple checks on `POST /3/device/<token>` (the
/// provider token against the registered key, its age, one team per connection, topic, push
/// type, priority, expiration, `apns-id`, the token, the body and its `aps`) and answering with
/// Apple's statuses and reasons; it also manages channels and takes broadcasts on them
/// (`BroadcastCheck`). It keeps every push and broadcast it accepted (unless told not to, to run
/// for days), and can be told to fail.
public final class LocalAPNs: Sendable {
    /// A `.p8` key's public half, as registered with Apple, and the apps of its team.
    public struct RegisteredKey: Sendable {
        public let teamID: String
        public let publicKey: P256.Signing.PublicKey
        public var bundleIDs: Set<String>
    }

    /// A push the local APNs accepted (answered 200).
    public struct ReceivedPush: Hashable, Sendable {
        public let deviceToken: String
        /// `apns-push-type`: `liveactivity`, `widgets` or `controls`.
        public let pushType: String
        public let topic: String
        public let priority: Int
        public let expiration: Int64?
        public let apnsID: String
        /// The JSON body, as sent.
        public let body: [UInt8]
        public let teamID: String
        public let keyID: String
        /// Which connection it came on (numbered from 1 as they were accepted).
        public let connection: Int
        /// The provider token that authorised it.
        public let providerToken: String
    }

    /// A request the local APNs accepted.
    public enum Accepted: Hashable, Sendable {
        case push(ReceivedPush)
        case broadcast(ReceivedBroadcast)
    }

    /// A broadcast the local APNs accepted (answered 200): every device on the channel gets it.
    public struct ReceivedBroadcast: Hashable, Sendable {
        public let channelID: String
        public let bundleID: String
        public let priority: Int
        public let expiration: Int64
        public let requestID: String
        /// The JSON body, as sent.
        public let body: [UInt8]
        public let teamID: String
        /// Which connection it came on (numbered from 1 as they were accepted).
        public let connection: Int
    }

    /// A failure to answer with instead of accepting, as APNs does at times.
    public enum Failure: Hashable, Sendable {
        /// This status and reason (`429 TooManyRequests`, `500 InternalServerError`,
        /// `503 ServiceUnavailable`, `400 DeviceTokenNotForTopic`, …).
        case status(Int, reason: String)
        /// No answer at all: the client's deadline must end the wait.
        case stall
        /// A GOAWAY frame with this reason, refusing the stream; the connection closes.
        case goAway(reason: String)
    }

    let state: NIOLockedValueBox<State>
    let clock: @Sendable () -> Int64
    private let channel: any Channel
    private let group: MultiThreadedEventLoopGroup
    private let logger: Logger

    /// The port it listens on.
    public let port: Int
    /// Its certificate in PEM: what a client must trust to talk to it.
    public let certificatePEM: String
    /// `https://127.0.0.1:<port>`.
    public var baseURL: String { "https://127.0.0.1:\(port)" }

    /// Starts listening on `host:port` (`0`: any free port).
    /// - Parameters:
    ///   - clock: seconds since 1970, for the provider token's age.
    ///   - keepingAccepted: whether `received` and `broadcasts` keep every push and broadcast
    ///     accepted (tests read them); `false` for a server that runs for days.
    ///   - onAccept: called with each push and broadcast accepted (`liveline dev` prints them).
    public static func start(
        host: String = "127.0.0.1",
        port: Int = 0,
        clock: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) },
        logger: Logger = Logger(label: "liveline.local-apns"),
        keepingAccepted: Bool = true,
        onAccept: (@Sendable (Accepted) -> Void)? = nil
    ) async throws -> LocalAPNs {
        let certificate = try SelfSignedCertificate()
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(certificate.certificate)],
            privateKey: .privateKey(certificate.privateKey)
        )
        tls.applicationProtocols = ["h2"]
        tls.minimumTLSVersion = .tlsv12
        let context = try NIOSSLContext(configuration: tls)
        let state = NIOLockedValueBox(State(keepsAccepted: keepingAccepted))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                let connection = state.withLockedValue { $0.openConnection() }
                return channel.eventLoop.makeCompletedFuture {
                    let handlers = channel.pipeline.syncOperations
                    try handlers.addHandler(NIOSSLServerHandler(context: context))
                    try handlers.addHandler(NIOHTTP2Handler(mode: .server))
                    try handlers.addHandler(ConnectionWindowKeeper())
                    try handlers.addHandler(
                        PushStreams(
                            connection: connection,
                            state: state,
                            clock: clock,
                            logger: logger,
                            onAccept: onAccept
                        )
                    )
                }
            }
            .bind(host: host, port: port)
            .get()
        return LocalAPNs(
            channel: channel,
            group: group,
            state: state,
            clock: clock,
            certificatePEM: certificate.pem,
            logger: logger
        )
    }

    private init(
        channel: any Channel,
        group: MultiThreadedEventLoopGroup,
        state: NIOLockedValueBox<State>,
        clock: @escaping @Sendable () -> Int64,
        certificatePEM: String,
        logger: Logger
    ) {
        self.channel = channel
        self.group = group
        self.state = state
        self.clock = clock
        self.certificatePEM = certificatePEM
        self.logger = logger
        port = channel.localAddress?.port ?? 0
    }

    /// Registers a key of a team, and an app (bundle id) of that team.
    public func register(teamID: String, keyID: String, publicKey: P256.Signing.PublicKey, bundleID: String) {
        state.withLockedValue { state in
            var key = state.keys[keyID] ?? RegisteredKey(teamID: teamID, publicKey: publicKey, bundleIDs: [])
            key.bundleIDs.insert(bundleID)
            state.keys[keyID] = RegisteredKey(teamID: teamID, publicKey: publicKey, bundleIDs: key.bundleIDs)
        }
    }

    /// From now on, pushes to `deviceToken` are answered `410 Unregistered` with `timestamp`
    /// (milliseconds since 1970): the app was removed from the device then.
    public func unregister(deviceToken: String, at timestamp: Int64) {
        state.withLockedValue { $0.unregistered[deviceToken.lowercased()] = timestamp }
    }

    /// The device registered `deviceToken` again: pushes to it are accepted again.
    public func reinstate(deviceToken: String) {
        state.withLockedValue { $0.unregistered[deviceToken.lowercased()] = nil }
    }

    /// Answers the next `times` pushes (to `deviceToken`, or to any token) with `failure`, after
    /// the request itself passed every check.
    public func fail(_ failure: Failure, times: Int = 1, deviceToken: String? = nil) {
        state.withLockedValue {
            $0.failures.append(
                PlannedFailure(failure: failure, remaining: times, deviceToken: deviceToken?.lowercased())
            )
        }
    }

    /// Forgets the failures planned and not yet answered with: APNs works again.
    public func clearFailures() {
        state.withLockedValue { $0.failures = [] }
    }

    /// Every push accepted so far, in the order they were answered (none when started without
    /// `keepingAccepted`).
    public var received: [ReceivedPush] {
        state.withLockedValue { $0.received }
    }

    /// The pushes accepted for one device, oldest first.
    public func received(by deviceToken: String) -> [ReceivedPush] {
        received.filter { $0.deviceToken == deviceToken.lowercased() }
    }

    /// Every broadcast accepted so far, in the order they were answered (none when started
    /// without `keepingAccepted`).
    public var broadcasts: [ReceivedBroadcast] {
        state.withLockedValue { $0.broadcasts }
    }

    /// The channels of an app (bundle id), as created through the channel management API.
    public func channels(of bundleID: String) -> Set<String> {
        state.withLockedValue { Set(($0.channels[bundleID] ?? [:]).keys) }
    }

    /// APNs forgets the channel (deleted elsewhere): requests naming it are refused
    /// `ChannelNotRegistered`.
    public func forgetChannel(_ id: String, of bundleID: String) {
        state.withLockedValue { _ = $0.channels[bundleID]?.removeValue(forKey: id) }
    }

    /// From now on (`false`) the app's channel requests and broadcasts are refused
    /// `FeatureNotEnabled`, as for an app whose broadcast capability is not enabled.
    public func setBroadcastEnabled(_ enabled: Bool, for bundleID: String) {
        state.withLockedValue { state in
            if enabled { state.broadcastDisabled.remove(bundleID) } else { state.broadcastDisabled.insert(bundleID) }
        }
    }

    /// How many requests were refused, by reason.
    public var refusals: [String: Int] {
        state.withLockedValue { $0.refusals }
    }

    /// How many requests were left unanswered (`Failure.stall`).
    public var stalled: Int {
        state.withLockedValue { $0.stalled }
    }

    /// Stops listening and closes every connection.
    public func shutdown() async throws {
        try await channel.close()
        try await group.shutdownGracefully()
    }
}

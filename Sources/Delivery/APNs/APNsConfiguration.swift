import EventStore

/// Where requests to APNs go, and how long one may take.
public struct APNsConfiguration: Sendable {
    /// Apple's production host for pushes to devices, or a local one.
    public var productionURL: String
    /// Apple's sandbox (development) host for pushes to devices, or a local one.
    public var sandboxURL: String
    /// Where broadcasts on channels go (iOS 18), production and sandbox.
    public var broadcastProductionURL: String
    public var broadcastSandboxURL: String
    /// Where channels are created, read and deleted, production and sandbox.
    public var channelsProductionURL: String
    public var channelsSandboxURL: String
    /// A certificate (PEM) to trust besides the system's roots: a local APNs' own.
    public var trustedCertificatePEM: String?
    /// The deadline of every request: an unanswered request fails after it and is retried.
    public var requestTimeout: Duration
    /// How long opening a connection (TCP and TLS) may take.
    public var connectTimeout: Duration

    public static let appleProductionURL = "https://api.push.apple.com"
    public static let appleSandboxURL = "https://api.sandbox.push.apple.com"
    /// Apple's page on broadcasts names the device hosts for them.
    public static let appleBroadcastProductionURL = appleProductionURL
    public static let appleBroadcastSandboxURL = appleSandboxURL
    public static let appleChannelsProductionURL = "https://api-manage-broadcast.push.apple.com:2196"
    public static let appleChannelsSandboxURL = "https://api-manage-broadcast.sandbox.push.apple.com:2195"

    public init(
        productionURL: String = Self.appleProductionURL,
        sandboxURL: String = Self.appleSandboxURL,
        broadcastProductionURL: String = Self.appleBroadcastProductionURL,
        broadcastSandboxURL: String = Self.appleBroadcastSandboxURL,
        channelsProductionURL: String = Self.appleChannelsProductionURL,
        channelsSandboxURL: String = Self.appleChannelsSandboxURL,
        trustedCertificatePEM: String? = nil,
        requestTimeout: Duration = .seconds(10),
        connectTimeout: Duration = .seconds(10)
    ) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
        self.broadcastProductionURL = broadcastProductionURL
        self.broadcastSandboxURL = broadcastSandboxURL
        self.channelsProductionURL = channelsProductionURL
        self.channelsSandboxURL = channelsSandboxURL
        self.trustedCertificatePEM = trustedCertificatePEM
        self.requestTimeout = requestTimeout
        self.connectTimeout = connectTimeout
    }

    /// Whether `url` can be an APNs host: `https://host` or `https://host:port`, nothing after.
    public static func isBaseURL(_ url: String) -> Bool {
        APNsConnection.Endpoint(url: url) != nil
    }

    /// A host address that is not `https://host[:port]`.
    public struct InvalidURL: Error, CustomStringConvertible {
        public let url: String
        public var description: String { "an APNs address must be https://host or https://host:port, got \"\(url)\"" }
    }

    /// Every service of both environments at one address: a local APNs.
    public static func local(baseURL: String, trustedCertificatePEM: String) -> APNsConfiguration {
        APNsConfiguration(
            productionURL: baseURL,
            sandboxURL: baseURL,
            broadcastProductionURL: baseURL,
            broadcastSandboxURL: baseURL,
            channelsProductionURL: baseURL,
            channelsSandboxURL: baseURL,
            trustedCertificatePEM: trustedCertificatePEM
        )
    }

    func baseURL(of service: APNsService, in environment: APNsEnvironment) -> String {
        switch (service, environment) {
        case (.device, .production): productionURL
        case (.device, .sandbox): sandboxURL
        case (.broadcast, .production): broadcastProductionURL
        case (.broadcast, .sandbox): broadcastSandboxURL
        case (.channels, .production): channelsProductionURL
        case (.channels, .sandbox): channelsSandboxURL
        }
    }
}

/// The parts of APNs, each at hosts of its own.
public enum APNsService: Hashable, Sendable, CaseIterable {
    /// Pushes to one device (`/3/device/<token>`).
    case device
    /// Pushes to every device subscribed to a channel (`/4/broadcasts/apps/<bundle id>`).
    case broadcast
    /// Creating, reading and deleting channels (`/1/apps/<bundle id>/channels`).
    case channels
}

import EventStore

/// Where pushes go, and how long a request may take.
public struct APNsConfiguration: Sendable {
    /// Apple's production host, or a local one.
    public var productionURL: String
    /// Apple's sandbox (development) host, or a local one.
    public var sandboxURL: String
    /// A certificate (PEM) to trust besides the system's roots: a local APNs' own.
    public var trustedCertificatePEM: String?
    /// The deadline of every request: an unanswered request fails after it and is retried.
    public var requestTimeout: Duration
    /// How long opening a connection (TCP and TLS) may take.
    public var connectTimeout: Duration

    public static let appleProductionURL = "https://api.push.apple.com"
    public static let appleSandboxURL = "https://api.sandbox.push.apple.com"

    public init(
        productionURL: String = Self.appleProductionURL,
        sandboxURL: String = Self.appleSandboxURL,
        trustedCertificatePEM: String? = nil,
        requestTimeout: Duration = .seconds(10),
        connectTimeout: Duration = .seconds(10)
    ) {
        self.productionURL = productionURL
        self.sandboxURL = sandboxURL
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

    /// Both environments at one address: a local APNs.
    public static func local(baseURL: String, trustedCertificatePEM: String) -> APNsConfiguration {
        APNsConfiguration(productionURL: baseURL, sandboxURL: baseURL, trustedCertificatePEM: trustedCertificatePEM)
    }

    func baseURL(of environment: APNsEnvironment) -> String {
        switch environment {
        case .production: productionURL
        case .sandbox: sandboxURL
        }
    }
}

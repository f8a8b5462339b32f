import ActivityLifecycle
import ArgumentParser
import CanonicalJSON
import Delivery
import EmbeddedPostgres
import EventStore
import Foundation
import Hummingbird
import LocalAPNs
import ServiceLifecycle

/// `liveline dev`: the embedded default. Without `DATABASE_URL`, starts a private PostgreSQL
/// cluster under `.liveline/`, migrates it and serves; Ctrl-C stops the server, then the cluster.
struct Dev: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run Liveline on a private PostgreSQL cluster (or on DATABASE_URL when set)."
    )

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        try await reportingFailures {
            let environment = try CommandEnvironment.make(options)
            let configuration = environment.configuration
            let logger = environment.logger
            var services: [any Service] = []
            let databaseURL: String
            if let url = configuration.databaseURL {
                databaseURL = url
            } else {
                let cluster = try await EmbeddedPostgres.startDevelopmentCluster(
                    under: configuration.devDataDirectory,
                    logger: logger
                )
                services.append(EmbeddedPostgresService(cluster: cluster))
                databaseURL = try await cluster.createDatabaseIfMissing("liveline", logger: logger)
            }
            let pool = try environment.makePool(databaseURL: databaseURL)
            let migrator = try environment.makeMigrator(pool: pool)
            let adminKey = configuration.adminKey ?? DevelopmentKeys.newAdminKey()
            let secret = try configuration.secretKey ?? DevelopmentAPNs.secret(under: configuration.devDataDirectory)
            // Pushes go to a local APNs in this process, unless LIVELINE_APNS_SANDBOX_URL names
            // another (`liveline local-apns` in a process of its own, say): then to the configured
            // hosts, with the demo app's credentials left as they are.
            let external = configuration.apnsSandboxURL != APNsConfiguration.appleSandboxURL
            let local = external ? nil : try await DevelopmentAPNs.start()
            if let local { services.append(LocalAPNsService(server: local)) }
            let app = try environment.makeApplication(
                pool: pool,
                databaseURL: databaseURL,
                migrator: migrator,
                adminKey: adminKey,
                secretKey: secret,
                apns: local.map { .local(baseURL: $0.baseURL, trustedCertificatePEM: $0.certificatePEM) },
                runningAfter: services
            ) { store in
                try await migrator.migrate(logger: logger)
                let demo = try await DevelopmentKeys.demoAppKey(store: store)
                if let local {
                    try await DevelopmentAPNs.configureDemoApp(
                        demo.app,
                        bundleID: DevelopmentKeys.demoBundleID,
                        on: local,
                        store: store,
                        secret: secret
                    )
                }
                let apnsLine =
                    local.map { server in
                        """
                        a local APNs at \(server.baseURL) receives every push (printed below as
                                             "local APNs → device …"); the demo app's credentials point at it
                        """
                    } ?? "\(configuration.apnsSandboxURL) (LIVELINE_APNS_SANDBOX_URL) receives the sandbox pushes"
                Self.printWelcome(
                    configuration,
                    databaseURL: databaseURL,
                    adminKey: adminKey,
                    demo: demo,
                    apnsLine: apnsLine
                )
            }
            try await environment.run(app)
        }
    }

    /// The welcome `dev` prints once it is ready: where it serves, its keys, and curls to try.
    private static func printWelcome(
        _ configuration: LivelineConfiguration,
        databaseURL: String,
        adminKey: String,
        demo: IssuedAPIKey,
        apnsLine: String
    ) {
        let base = "http://\(configuration.host):\(configuration.port)"
        let token = DevelopmentAPNs.demoDeviceToken
        let auth = "-H 'Authorization: Bearer \(demo.secret)' -H 'Content-Type: application/json'"
        // Written at once (not through print's buffer) so it precedes the server's log lines.
        FileHandle.standardOutput.write(
            Data(
                """

                Liveline is starting at \(base)
                  database:      \(databaseURL)
                  admin key:     \(adminKey)\(configuration.adminKey == nil ? "  (new each start; set LIVELINE_ADMIN_KEY to keep one)" : "")
                  app "\(demo.app)":    key \(demo.secret)  (issued now; shown once)
                  APNs:          \(apnsLine)
                  console:       \(base)/console  (sign in with either key)
                Try: request an activity, register the device's push token, update it, see the delivery:
                  curl -s -X POST \(base)/v1/activities \(auth) \\
                    -d '{"activityId":"order-1","activityType":"Delivery","contentState":{"eta":"12:30","stage":"packed"}}'
                  curl -s -X PUT \(base)/v1/activities/order-1/push-token \(auth) -d '{"pushToken":"\(token)"}'
                  curl -s -X POST \(base)/v1/activities/order-1/updates \(auth) \\
                    -d '{"contentState":{"eta":"12:25","stage":"on the way"}}'
                  curl -s \(base)/v1/activities/order-1/deliveries -H 'Authorization: Bearer \(demo.secret)'
                Reload the device's widgets: register its widget token, then ask for a reload:
                  curl -s -X PUT \(base)/v1/devices/phone-1/widget-push-token \(auth) \\
                    -d '{"widgetPushToken":"\(DevelopmentAPNs.demoWidgetToken)","widgets":[{"kind":"OrderStatus","family":"systemSmall"}]}'
                  curl -s -X POST \(base)/v1/reloads \(auth) -d '{"pushType":"widgets","deviceIds":["phone-1"]}'
                The API is described at \(base)/openapi.yaml and in docs/api.md. Press Ctrl-C to stop.


                """.utf8
            )
        )
    }
}

/// The keys `liveline dev` prints: an admin key, and a key of the demo app, made on first use.
enum DevelopmentKeys {
    static let demoApp = AppID(rawValue: "demo")!
    static let demoBundleID = "com.example.demo"

    static func newAdminKey() -> String {
        "ll_admin_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }

    static func demoAppKey(store: EventStore) async throws -> IssuedAPIKey {
        if try await store.app(demoApp) == nil {
            try await store.createApp(demoApp, AppSettings(bundleID: demoBundleID), by: .commandLine)
        }
        return try await store.issueKey(for: demoApp, by: .commandLine)
    }
}

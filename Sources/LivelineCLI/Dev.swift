import ActivityLifecycle
import ArgumentParser
import CanonicalJSON
import EmbeddedPostgres
import EventStore
import Foundation
import Hummingbird
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
            try await migrator.migrate(logger: logger)

            let adminKey = configuration.adminKey ?? DevelopmentKeys.newAdminKey()
            let demo = try await DevelopmentKeys.demoAppKey(
                store: EventStore(pool: pool, lifecycle: Lifecycle(policy: environment.lifecyclePolicy))
            )
            let base = "http://\(configuration.host):\(configuration.port)"
            // Written at once (not through print's buffer) so it precedes the server's log lines.
            FileHandle.standardOutput.write(
                Data(
                    """

                    Liveline is starting at \(base)
                      database:      \(databaseURL)
                      admin key:     \(adminKey)\(configuration.adminKey == nil ? "  (new each start; set LIVELINE_ADMIN_KEY to keep one)" : "")
                      app "\(demo.app)":    key \(demo.secret)  (issued now; shown once)
                    Try:
                      curl -s -X POST \(base)/v1/activities -H 'Authorization: Bearer \(demo.secret)' \\
                        -H 'Content-Type: application/json' \\
                        -d '{"activityType":"Delivery","contentState":{"eta":"12:30","stage":"packed"}}'
                    The API is described at \(base)/openapi.yaml and in docs/api.md. Press Ctrl-C to stop.


                    """.utf8
                )
            )
            let app = try await environment.makeApplication(
                pool: pool,
                databaseURL: databaseURL,
                migrator: migrator,
                adminKey: adminKey,
                runningAfter: services
            )
            try await app.runService()
        }
    }
}

/// The keys `liveline dev` prints: an admin key, and a key of the demo app, made on first use.
enum DevelopmentKeys {
    static let demoApp = AppID(rawValue: "demo")!

    static func newAdminKey() -> String {
        "ll_admin_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }

    static func demoAppKey(store: EventStore) async throws -> IssuedAPIKey {
        if try await store.app(demoApp) == nil {
            try await store.createApp(demoApp, AppSettings(bundleID: "com.example.demo"), by: .commandLine)
        }
        return try await store.issueKey(for: demoApp, by: .commandLine)
    }
}

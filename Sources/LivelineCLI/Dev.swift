import ArgumentParser
import EmbeddedPostgres
import EventStore
import Foundation
import Hummingbird
import LivelineHTTP
import NIOPosix
import Postgres
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

            let base = "http://\(configuration.host):\(configuration.port)"
            // Written at once (not through print's buffer) so it precedes the server's log lines.
            FileHandle.standardOutput.write(
                Data(
                    """

                    Liveline is starting at \(base)
                      database:  \(databaseURL)
                      try:       curl \(base)/readyz
                    Press Ctrl-C to stop.


                    """.utf8
                )
            )
            let app = buildApplication(
                configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
                migrator: migrator,
                services: services + (try await environment.serverServices(pool: pool, databaseURL: databaseURL)),
                logger: logger
            )
            try await app.runService()
        }
    }
}

import ArgumentParser
import Hummingbird
import LivelineHTTP

/// `liveline serve`: the HTTP API and the deadline worker, until SIGTERM or SIGINT.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the HTTP API on DATABASE_URL.")

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        try await reportingFailures {
            let environment = try CommandEnvironment.make(options)
            let databaseURL = try environment.requireDatabaseURL()
            let pool = try environment.makePool(databaseURL: databaseURL)
            let app = buildApplication(
                configuration: .init(
                    address: .hostname(environment.configuration.host, port: environment.configuration.port)
                ),
                migrator: try environment.makeMigrator(pool: pool),
                services: try await environment.serverServices(pool: pool, databaseURL: databaseURL),
                logger: environment.logger
            )
            try await app.runService()
        }
    }
}

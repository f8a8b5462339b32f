import ArgumentParser
import Hummingbird
import LivelineHTTP

/// `liveline serve`: the HTTP API, until SIGTERM or SIGINT.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the HTTP API on DATABASE_URL.")

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        try await reportingFailures {
            let environment = try CommandEnvironment.make(options)
            let pool = try environment.makePool(databaseURL: try environment.requireDatabaseURL())
            let migrator = try environment.makeMigrator(pool: pool)
            let app = buildApplication(
                configuration: .init(
                    address: .hostname(environment.configuration.host, port: environment.configuration.port)
                ),
                pool: pool,
                migrator: migrator,
                logger: environment.logger
            )
            try await app.runService()
        }
    }
}

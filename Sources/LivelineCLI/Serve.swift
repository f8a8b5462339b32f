import ArgumentParser
import Hummingbird

/// `liveline serve`: the HTTP API, the deadline worker and delivery, until SIGTERM or SIGINT.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the HTTP API on DATABASE_URL.")

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        try await reportingFailures {
            let environment = try CommandEnvironment.make(options)
            let databaseURL = try environment.requireDatabaseURL()
            let pool = try environment.makePool(databaseURL: databaseURL)
            let migrator = try environment.makeMigrator(pool: pool)
            let app = try environment.makeApplication(
                pool: pool,
                databaseURL: databaseURL,
                migrator: migrator,
                adminKey: environment.configuration.adminKey,
                secretKey: environment.configuration.secretKey,
                first: { _ in try await environment.requireMigrated(migrator) }
            )
            try await environment.run(app)
        }
    }
}

import ArgumentParser
import EventStore
import Postgres

/// `liveline migrate`: applies pending migrations to `DATABASE_URL`.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending database migrations.")

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        try await reportingFailures {
            let environment = try CommandEnvironment.make(options)
            let pool = try environment.makePool(databaseURL: try environment.requireDatabaseURL())
            let applied = try await pool.using { pool in
                try await environment.makeMigrator(pool: pool).migrate(logger: environment.logger)
            }
            print(
                applied.isEmpty
                    ? "database is up to date" : "applied \(applied.map(\.fileName).joined(separator: ", "))"
            )
        }
    }
}

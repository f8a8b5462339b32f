import ArgumentParser
import EventStore

/// `liveline migrate`: applies pending migrations to `DATABASE_URL`.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending database migrations.")

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        try await reportingFailures {
            let environment = try CommandEnvironment.make(options)
            let applied = try await environment.withMigrator { try await $0.migrate(logger: environment.logger) }
            print(
                applied.isEmpty
                    ? "database is up to date" : "applied \(applied.fileNames.joined(separator: ", "))"
            )
        }
    }
}

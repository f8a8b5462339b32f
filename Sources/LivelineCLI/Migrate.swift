import ArgumentParser
import EventStore

/// `liveline migrate`: applies pending migrations to `DATABASE_URL`, then writes what the
/// configuration says the database holds and creates the log's partitions around now, as a
/// server does at start (`CommandEnvironment.prepareDatabase`), so that the database takes
/// events at once in the partitions the configuration asks for.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending database migrations.")

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        try await reportingFailures {
            let environment = try CommandEnvironment.make(options)
            let applied = try await environment.withMigrator { try await $0.migrate(logger: environment.logger) }
            try await environment.withStore { try await environment.prepareDatabase($0) }
            print(
                applied.isEmpty
                    ? "database is up to date" : "applied \(applied.fileNames.joined(separator: ", "))"
            )
        }
    }
}

import ArgumentParser
import EventStore

/// `liveline migrate`: applies pending migrations to `DATABASE_URL`, then creates the log's
/// partitions around now, so that the database takes events at once.
struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply pending database migrations.")

    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        try await reportingFailures {
            let environment = try CommandEnvironment.make(options)
            let applied = try await environment.withMigrator { try await $0.migrate(logger: environment.logger) }
            _ = try await environment.withStore { try await $0.createPartitions() }
            print(
                applied.isEmpty
                    ? "database is up to date" : "applied \(applied.fileNames.joined(separator: ", "))"
            )
        }
    }
}

import EventStore
import Foundation
import TestSupport
import Testing

@Suite("The schema snapshot under review")
struct SchemaSnapshotTests {
    @Test("a freshly migrated database matches migrations/snapshot/schema.sql")
    func snapshotIsCurrent() async throws {
        // Migrated only: the log's partitions, named by the dates they cover, are the server's data.
        let database = try await TestDatabase.makeEmpty()
        try await TestDatabase.withPool(database) { pool in
            try await Migrator.loading(from: TestDatabase.migrationsDirectory, pool: pool).migrate(
                logger: TestDatabase.logger
            )
        }
        let actual = try SchemaSnapshot.take(of: database)
        if ProcessInfo.processInfo.environment["LIVELINE_UPDATE_SNAPSHOT"] == "1" {
            try FileManager.default.createDirectory(
                at: SchemaSnapshot.file.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try Data(actual.utf8).write(to: SchemaSnapshot.file)
        }
        let committed = try? String(contentsOf: SchemaSnapshot.file, encoding: .utf8)
        #expect(
            committed == actual,
            "the schema differs from migrations/snapshot/schema.sql: run scripts/update-schema-snapshot.sh and commit its diff"
        )
    }
}

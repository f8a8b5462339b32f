import Foundation
import TestSupport
import Testing

@Suite("The schema snapshot under review")
struct SchemaSnapshotTests {
    @Test("a freshly migrated database matches migrations/snapshot/schema.sql")
    func snapshotIsCurrent() async throws {
        let actual = try SchemaSnapshot.take(of: try await TestDatabase.makeMigrated())
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

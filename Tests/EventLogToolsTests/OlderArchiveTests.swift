import ActivityLifecycle
import CanonicalJSON
import EventLogTools
import Foundation
import LogArchive
import Postgres
import TestSupport
import Testing

@testable import EventStore

/// Archives written before archives were sealed (`liveline-archive/1`) hold every value as it
/// was; the maintenance seals them once, after which an erasure reaches them like any other.
@Suite("Archives written before sealing: sealed once, then erasable")
struct OlderArchiveTests {
    typealias Person = ErasureTests
    static let tables = ["events", "deliveries", "rejections", "push_token_invalidations"]

    /// Archives each table's current partition as Liveline did before sealing — its rows as they
    /// are, by one COPY — and records it so (`liveline-archive/1`).
    static func archiveAsBefore(_ pool: ConnectionPool, into folder: ArchiveFolder) async throws {
        try await pool.withConnection { connection in
            for table in tables {
                // The partition that holds the table's rows (they were all written now).
                let partition: String = try connection.query(
                    """
                    SELECT table_name FROM log_partitions
                    WHERE parent = \(table) AND from_time <= now() AND now() < to_time
                    ORDER BY from_time DESC LIMIT 1
                    """
                ).single!.decode("table_name")
                let rows: Int64 = try connection.query("SELECT count(*) AS n FROM \(identifier: partition)").single!
                    .decode("n")
                #expect(rows > 0, "\(partition)")
                var manifest = try folder.write(
                    .init(table: table, partition: partition, from: "-infinity", to: "infinity"),
                    archivedAt: "2026-01-01T00:00:00Z"
                ) { write in
                    try connection.transaction { connection in
                        try connection.executeScript("SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO'")
                        return table == "events"
                            ? try connection.copyOut(
                                """
                                COPY (SELECT *, pg_xact_commit_timestamp(transaction_id::xid) AS committed_at
                                      FROM \(identifier: partition) ORDER BY app_id, activity_id, version)
                                TO STDOUT WITH (FORMAT csv, HEADER)
                                """,
                                into: write
                            )
                            : try connection.copyOut(
                                "COPY (SELECT * FROM \(identifier: partition) ORDER BY id) TO STDOUT WITH (FORMAT csv, HEADER)",
                                into: write
                            )
                    }
                }
                manifest.format = "liveline-archive/1"
                try manifest.encoded().write(to: URL(filePath: "\(folder.path)/\(partition)/manifest.json"))
                try connection.execute(
                    """
                    UPDATE log_partitions SET archive = \(JSONB(String(decoding: try manifest.encoded(), as: UTF8.self)))
                    WHERE table_name = \(partition)
                    """
                )
            }
        }
    }

    @Test(
        "archives written before sealing hold the person in the open until the maintenance seals them; then they read as before, verify, and an erasure reaches them"
    )
    func olderArchivesSealed() async throws {
        try await ArchivedErasureTests.withArchive { store, pool, database, folder in
            try await ArchivedErasureTests.recordDismissed(store)
            let ride = Person.stream("ride-0")
            let live = try await store.audit(of: ride, archives: folder)
            try await Self.archiveAsBefore(pool, into: folder)
            // The retirement finds them archived, and detaches and drops their partitions.
            _ = try await ArchivedErasureTests.retireEverything(store, into: folder)
            #expect(try await store.activity(ride) == nil)
            let before = try ArchivedErasureTests.archiveText(folder)
            #expect(before.contains(Person.address) && before.contains(Person.device))

            // A run that stopped after putting one sealed archive in place, before recording it.
            let events = try #require(
                try folder.manifests().first { $0.table == "events" && $0.format == "liveline-archive/1" }
            )
            _ = try await pool.withConnection { connection in
                try OlderArchive.seal(events, in: folder, pause: {}, connection)
            }
            let sealed = try #require(try await store.sealOlderArchives(in: folder))
            #expect(Set(sealed.map(\.table)) == Set(Self.tables))
            #expect(sealed.allSatisfy { $0.format == ArchiveManifest.currentFormat })
            #expect(try await store.sealOlderArchives(in: folder) == [])
            let after = try ArchivedErasureTests.archiveText(folder)
            for value in Person.personal {
                #expect(!after.contains(value), "\(value) is in an archive in the open")
            }
            let opened = try await store.audit(of: ride, archives: folder)
            #expect(opened.archive?.format == ArchiveManifest.currentFormat)
            #expect(opened.entries == live.entries)
            try await ArchivedErasureTests.expectVerified(store, folder, erased: 0)

            let erasure = try await store.requestErasure(
                .device(DeviceID(rawValue: Person.device)!),
                in: Person.app,
                by: .appAPI
            )
            // Nothing in the database names the device's archived activities: its key reaches them.
            #expect(erasure.activities == 0)
            try await store.eraseWaitingActivities()
            let dump = try Person.dump(database)
            for value in Person.personal {
                #expect(!dump.contains(value), "\(value) is still in the database")
            }
            let erased = try await store.audit(of: ride, archives: folder)
            #expect(!erased.entries.contains { $0.summary.contains(Person.address) })
            #expect(erased.entries.last?.type == "erased")
            try await ArchivedErasureTests.expectVerified(store, folder, erased: 3)
        }
    }
}

import ActivityLifecycle
import CanonicalJSON
import EventLogTools
import Foundation
import LogArchive
import Postgres
import TestSupport
import Testing

@testable import EventStore

@Suite("liveline verify --archive: archives and live log checked together")
struct ArchiveVerifyTests {
    typealias Fixture = AuditTimelineTests
    static let app = Fixture.app

    static func stream(_ name: String) -> StreamID {
        StreamID(app: app, activity: ActivityID(rawValue: name)!)
    }

    static func request() -> Command {
        .request(.init(activityType: "T", content: ActivityContent(contentState: .empty)))
    }

    /// Copies the events of `source` (those of `versions`) to a stream `name` that began in 2020,
    /// in one transaction: a stream of a partition long past, as if it had been written then.
    static func appendToThePast(
        _ name: String,
        copying source: String,
        versions: [Int32],
        _ pool: ConnectionPool
    ) async throws {
        try await pool.withConnection { connection in
            try connection.execute(
                """
                INSERT INTO events (position, app_id, activity_id, version, type, data, caused_by, occurred_at,
                    stream_recorded_at)
                SELECT pg_current_xact_id()::text::bigint * 65536 + version, app_id, \(name), version, type, data,
                       caused_by, occurred_at, '2020-01-01 00:00:00+00'
                FROM events WHERE app_id = \(app.rawValue) AND activity_id = \(source)
                  AND version = ANY (\(PostgresArray(versions)))
                """
            )
        }
    }

    @Test("archived streams are folded, each archive is checked against its record, and caps span both")
    func archivesAndLiveLog() async throws {
        let folder = ArchiveFolder(
            path: FileManager.default.temporaryDirectory.appendingPathComponent("verify-\(UUID().uuidString)").path
        )
        try await Fixture.withStore { store, pool in
            try await store.createApp(Self.app, AppSettings(bundleID: "b", maxOpen: 2), by: .commandLine)
            try await store.execute(Self.request(), on: Self.stream("template"), at: Fixture.start)
            try await store.execute(
                .end(.init(dismissal: .immediate)),
                on: Self.stream("template"),
                at: Fixture.start + .seconds(1)
            )
            try await store.execute(Self.request(), on: Self.stream("live"), at: Fixture.start)
            try await store.updateApp(Self.app, AppSettings(bundleID: "b", maxOpen: 1), by: .commandLine)
            // Opened and closed while `live` was open, beyond the cap of 1; and a stream with a gap.
            try await Self.appendToThePast("old", copying: "template", versions: [1, 2, 3], pool)
            try await Self.appendToThePast("gap", copying: "template", versions: [1, 3], pool)

            let now: PostgresTimestamp = try await pool.withConnection {
                try $0.query("SELECT now() AS now").single!.decode("now")
            }
            let retired = try #require(
                await store.retirePartitions(
                    RetentionPolicy(retention: .seconds(86400), archive: folder, workShare: 1),
                    asOf: Timestamp(now) + .seconds(3 * 86400)
                )
            )
            // The partition of 2020 went (with its two streams); today's holds open `live` and stays.
            let archive = try #require(retired.first { $0.archive?.rows == 5 }?.archive)
            #expect(archive.table == "events")

            // Without the archive, the log left looks clean: the breach went with the partition.
            let live = try await LogVerifier(store: store, now: Fixture.start + .seconds(60)).verify()
            #expect(live.findings.isEmpty)
            #expect(live.archive == nil)

            let both = try await LogVerifier(store: store, now: Fixture.start + .seconds(60)).verify(archive: folder)
            let outcome = try #require(both.archive)
            #expect(outcome.problems.isEmpty, "\(outcome.problems)")
            #expect(outcome.streams == 2)
            #expect(outcome.events == 5)
            #expect(outcome.archives >= 1)
            #expect(Set(both.findings.map(\.stream)) == [Self.stream("gap"), Self.stream("old")])
            #expect(both.findings.first { $0.stream == Self.stream("gap") }?.rule == .transition)
            #expect(both.findings.first { $0.stream == Self.stream("old") }?.rule == .cap)
            #expect(!both.isClean)

            // An archive changed or gone is a problem, named.
            var changed = archive
            changed.rows += 1
            let manifestPath = "\(folder.path)/\(archive.partition)/manifest.json"
            try changed.encoded().write(to: URL(fileURLWithPath: manifestPath))
            let tampered = try await LogVerifier(store: store, now: Fixture.start + .seconds(60)).verify(
                archive: folder
            )
            #expect(
                tampered.archive?.problems == [
                    "the archive of \(archive.partition) is not the one the database recorded when it archived it"
                ]
            )
            try FileManager.default.removeItem(atPath: "\(folder.path)/\(archive.partition)")
            let missing = try await LogVerifier(store: store, now: Fixture.start + .seconds(60)).verify(
                archive: folder
            )
            #expect(
                missing.archive?.problems == [
                    "partition \(archive.partition) was archived, but its archive is not in \(folder.path)"
                ]
            )
        }
    }

    @Test("a retirement stopped after its archive, before or after its detach: every event is counted once")
    func stoppedRetirement() async throws {
        let folder = ArchiveFolder(
            path: FileManager.default.temporaryDirectory.appendingPathComponent("verify-\(UUID().uuidString)").path
        )
        try await Fixture.withStore { store, pool in
            try await store.createApp(Self.app, AppSettings(bundleID: "b"), by: .commandLine)
            try await store.execute(Self.request(), on: Self.stream("template"), at: Fixture.start)
            try await store.execute(
                .end(.init(dismissal: .immediate)),
                on: Self.stream("template"),
                at: Fixture.start + .seconds(1)
            )
            try await Self.appendToThePast("old", copying: "template", versions: [1, 2, 3], pool)
            let verify = {
                try await LogVerifier(store: store, now: Fixture.start + .seconds(60)).verify(archive: folder)
            }
            let all = try await verify().events
            #expect(all == 6)

            // A run that archived the partition of 2020 and stopped there: the live log still has it.
            let partition: RetiringPartition = try await pool.withConnection { connection in
                let now: PostgresTimestamp = try connection.query("SELECT now() AS now").single!.decode("now")
                let asOf = Timestamp(now) + .seconds(3 * 86400)
                let old: String = try connection.query(
                    "SELECT tableoid::regclass::text AS name FROM events WHERE activity_id = 'old' LIMIT 1"
                ).single!.decode("name")
                _ = try PartitionRetirementQueries.settleLogPartitions(asOf: asOf, connection)
                var found: RetiringPartition?
                while found == nil,
                    let next = try PartitionRetirementQueries.nextToRetire(
                        retention: .seconds(86400),
                        asOf: asOf,
                        connection
                    )
                {
                    if next.name == old {
                        found = next
                    } else {
                        try PartitionRetirementQueries.markRetired(next, connection)
                    }
                }
                let partition = try #require(found)
                _ = try EventStore.archive(partition, into: folder, archivedAt: asOf, connection)
                return partition
            }
            let archived = try await verify()
            #expect(archived.archive?.problems == [])
            #expect(archived.events == all)
            #expect(archived.archive?.events == 0)

            // Then detached, not yet dropped: its events are read from the archive.
            try await pool.withConnection { try PartitionRetirementQueries.detach(partition, $0) }
            let detached = try await verify()
            #expect(detached.archive?.problems == [])
            #expect(detached.events == all - 3)
            #expect(detached.archive?.events == 3)
            #expect(detached.archive?.archives == 1)
            #expect(detached.findings.isEmpty)
        }
    }
}

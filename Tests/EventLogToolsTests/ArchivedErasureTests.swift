import ActivityLifecycle
import CanonicalJSON
import EventLogTools
import Foundation
import LogArchive
import Postgres
import Synchronization
import TestSupport
import Testing

@testable import EventStore

/// Erasure reaches archives already written (docs/decisions/0040): their personal values are
/// sealed under keys of their activities, which an erasure destroys; no archive is rewritten.
@Suite("Erasure of archived activities: sealed values whose keys are destroyed")
struct ArchivedErasureTests {
    typealias Person = ErasureTests

    /// Every row of every archive in `folder`, and its manifests, as text.
    static func archiveText(_ folder: ArchiveFolder) throws -> String {
        var text = ""
        for manifest in try folder.manifests() {
            text += String(decoding: try manifest.encoded(), as: UTF8.self)
            try folder.read(manifest) { header, row in
                text += header.joined(separator: ",") + "\n" + row.map { $0 ?? "" }.joined(separator: ",") + "\n"
            }
        }
        return text
    }

    static func withArchive(
        _ body: (EventStore, ConnectionPool, String, ArchiveFolder) async throws -> Void
    )
        async throws
    {
        let folder = ArchiveFolder(
            path: FileManager.default.temporaryDirectory.appendingPathComponent("erasure-\(UUID().uuidString)").path
        )
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let database = try await TestDatabase.makeMigrated()
        try await TestDatabase.withPool(database, maximumConnections: 3) { pool in
            try await body(EventStore(pool: pool, lifecycle: Lifecycle()), pool, database, folder)
        }
    }

    /// The person's activities and the other person's, all dismissed: their partitions can settle.
    static func recordDismissed(_ store: EventStore) async throws {
        try await Person.recordPerson(store)
        try await store.execute(.end(.init(dismissal: .immediate)), on: Person.stream("other"), at: Person.at(9))
    }

    /// Retires every partition of every table, each ending before the retention as of two days
    /// from now, into `folder`.
    static func retireEverything(_ store: EventStore, into folder: ArchiveFolder) async throws -> [RetiredPartition] {
        try await store.retirePartitions(
            RetentionPolicy(retention: .seconds(86_400), archive: folder, workShare: 1),
            asOf: .now() + .seconds(2 * 86_400)
        ) ?? []
    }

    /// `liveline verify --archive` over `folder` and the live log: clean, with `streams`
    /// archived streams, `erased` of them erased.
    static func expectVerified(
        _ store: EventStore,
        _ folder: ArchiveFolder,
        streams: Int = 4,
        erased: Int,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let summary = try await LogVerifier(store: store, now: .now()).verify(archive: folder)
        #expect(
            summary.isClean,
            "\(summary.findings) \(summary.archive?.problems ?? [])",
            sourceLocation: sourceLocation
        )
        #expect(
            summary.archive?.streams == streams && summary.archive?.erasedStreams == erased,
            sourceLocation: sourceLocation
        )
    }

    @Test(
        "a device whose activities were archived is erased by destroying its key: nothing of it in the database or any archive, archives unchanged, the history still checks"
    )
    func archivedDeviceErased() async throws {
        try await Self.withArchive { store, pool, database, folder in
            try await Self.recordDismissed(store)
            let ride = Person.stream("ride-0")
            let live = try await store.audit(of: ride, archives: folder)
            let retired = try await Self.retireEverything(store, into: folder)
            #expect(
                Set(retired.filter { ($0.archive?.rows ?? 0) > 0 }.map(\.table)) == [
                    "events", "deliveries", "rejections", "push_token_invalidations",
                ]
            )
            #expect(try await store.activity(ride) == nil)
            // Every table retired, no device of a retired activity is kept.
            let kept: Int64 = try await pool.withConnection {
                try $0.query("SELECT count(*) AS n FROM retired_activities").single!.decode("n")
            }
            #expect(kept == 0)

            // Archives never hold a personal value in the open; with its keys, the audit reads them.
            let sealedText = try Self.archiveText(folder)
            for value in Person.personal {
                #expect(!sealedText.contains(value), "\(value) is in an archive in the open")
            }
            #expect(sealedText.contains("erased:") && sealedText.contains("•••"))
            let opened = try await store.audit(of: ride, archives: folder)
            #expect(opened.archive != nil)
            #expect(opened.entries == live.entries)
            #expect(opened.entries.contains { $0.summary.contains(Person.address) })
            let files = try folder.manifests()

            // Only archives hold the device's three activities, and nothing in the database names
            // them any more: they are reached through the device's key.
            let erasure = try await store.requestErasure(
                .device(DeviceID(rawValue: Person.device)!),
                in: Person.app,
                by: .appAPI
            )
            #expect(erasure.activities == 0)
            try await store.eraseWaitingActivities()
            #expect(try await store.erasure(erasure.id)?.finishedAt != nil)

            // The archives are the same files; nothing of the device is left to open them with.
            #expect(try folder.manifests() == files)
            #expect(try Self.archiveText(folder) == sealedText)
            let dump = try Person.dump(database)
            for value in Person.personal {
                #expect(!dump.contains(value), "\(value) is still in the database")
            }
            let tombstone: Bool = try await pool.withConnection {
                try $0.query(
                    """
                    SELECT device_id IS NULL AND key IS NULL AND erased_at IS NOT NULL AS erased FROM device_references
                    WHERE reference = \(erasure.reference)
                    """
                )
                .single!.decode("erased")
            }
            #expect(tombstone)

            let erased = try await store.audit(of: ride, archives: folder)
            #expect(erased.entries.map(\.type).dropLast() == live.entries.map(\.type))
            #expect(!erased.entries.contains { $0.summary.contains(Person.address) })
            #expect(erased.entries.contains { $0.summary.contains(#"alert "•••""#) })
            #expect(erased.entries.last?.type == "erased")
            #expect(erased.entries.flatMap(\.deliveries).allSatisfy { $0.deviceToken == "erased" })
            // Another person's archived activity still opens.
            let other = try await store.audit(of: Person.stream("other"), archives: folder)
            #expect(other.archive != nil && other.entries.contains { $0.summary.contains("Other Person Stays") })

            try await Self.expectVerified(store, folder, erased: 3)
        }
    }

    @Test(
        "an archived activity erased alone punctures the key tree: its values no longer open, its device's other activities' still do, archives unchanged"
    )
    func archivedActivityErased() async throws {
        try await Self.withArchive { store, pool, _, folder in
            try await Self.recordDismissed(store)
            _ = try await Self.retireEverything(store, into: folder)
            let (files, text) = (try folder.manifests(), try Self.archiveText(folder))
            func nodes() async throws -> Int64 {
                try await pool.withConnection {
                    try $0.query("SELECT count(*) AS n FROM archive_key_nodes").single!.decode("n")
                }
            }
            #expect(try await nodes() == 1)

            let erasure = try await store.requestErasure(
                .activity(ActivityID(rawValue: "ride-1")!),
                in: Person.app,
                by: .appAPI
            )
            #expect(erasure.activities == 1)
            try await store.eraseWaitingActivities()
            #expect(try folder.manifests() == files)
            #expect(try Self.archiveText(folder) == text)
            // The root, replaced by the nodes beside the leaf's path: one a level.
            #expect(try await nodes() == Int64(ArchiveKeyTree.depth))

            let erased = try await store.audit(of: Person.stream("ride-1"), archives: folder)
            #expect(erased.archive != nil)
            #expect(!erased.entries.contains { $0.summary.contains(Person.address) })
            #expect(erased.entries.last?.type == "erased")
            for other in ["ride-0", "ride-2"] {
                let audit = try await store.audit(of: Person.stream(other), archives: folder)
                #expect(audit.entries.contains { $0.summary.contains(Person.address) }, "\(other) still opens")
            }
            try await Self.expectVerified(store, folder, erased: 1)
        }
    }

    @Test(
        "activities erased before their partition is archived are written redacted and seal nothing; verify counts them erased, by the device's tombstone or the activity's punctured leaf"
    )
    func erasedBeforeArchiving() async throws {
        try await Self.withArchive { store, _, _, folder in
            try await Self.recordDismissed(store)
            _ = try await store.requestErasure(.device(DeviceID(rawValue: Person.device)!), in: Person.app, by: .appAPI)
            _ = try await store.requestErasure(.activity(ActivityID(rawValue: "other")!), in: Person.app, by: .appAPI)
            try await store.eraseWaitingActivities()
            _ = try await Self.retireEverything(store, into: folder)

            let text = try Self.archiveText(folder)
            for value in Person.personal + ["Other Person Stays"] {
                #expect(!text.contains(value), "\(value) is in an archive")
            }
            #expect(!text.contains("v2."), "an erased activity's values were sealed")
            try await Self.expectVerified(store, folder, erased: 4)
            let audit = try await store.audit(of: Person.stream("ride-0"), archives: folder)
            #expect(audit.archive != nil && audit.entries.last?.type == "erased")
        }
    }

    @Test(
        "an activity retired from the projection keeps its device while other tables hold its rows: their archives are sealed under the device's key, and an erasure of the device finds it"
    )
    func retiredActivityKeepsItsDevice() async throws {
        try await Self.withArchive { store, pool, _, _ in
            try await Self.recordDismissed(store)
            func partition(of parent: String) async throws -> RetiringPartition {
                try await pool.withConnection { connection in
                    let row = try connection.query(
                        """
                        SELECT table_name, from_time::text AS from_time, to_time::text AS to_time FROM log_partitions
                        WHERE parent = \(parent) AND from_time <= now() AND now() < to_time
                        """
                    ).single!
                    return RetiringPartition(
                        name: try row.decode("table_name"),
                        parent: parent,
                        from: try row.decode("from_time"),
                        to: try row.decode("to_time"),
                        archived: false
                    )
                }
            }
            let events = try await partition(of: "events")
            let removed = try await pool.withConnection {
                try PartitionRetirementQueries.removeProjection(of: events, limit: 100, $0)
            }
            #expect(removed == 4)
            func kept() async throws -> Int64 {
                try await pool.withConnection { connection in
                    try connection.query(
                        "SELECT count(*) AS n FROM retired_activities WHERE device_id = \(Person.device)"
                    ).single!.decode("n")
                }
            }
            #expect(try await kept() == 3)

            // The refusals, copied now, are sealed under the device's key with their activities'.
            let rejections = try await partition(of: "rejections")
            let csv: [UInt8] = try await pool.withConnection { connection in
                var csv: [UInt8] = []
                _ = try PartitionRetirementQueries.copy(rejections, connection, into: { csv += $0 })
                return csv
            }
            let reference: UUID? = try await pool.withConnection { connection in
                try connection.query(
                    "SELECT reference FROM device_references WHERE device_id = \(Person.device)"
                ).single?.decode("reference")
            }
            #expect(reference != nil)
            var records = CSVRecords()
            var rows: [[String?]] = []
            try csv.withUnsafeBytes { bytes in try records.feed(bytes) { rows.append($0) } }
            let header = try #require(rows.first?.map { $0 ?? "" })
            let (id, sealed) = (try #require(header.firstIndex(of: "id")), header.count - 1)
            let firsts = rows.dropFirst().compactMap { $0[sealed] }.filter { !$0.hasPrefix("v2.@") }
            #expect(firsts.count == 3)
            #expect(try firsts.allSatisfy { try SealedRun.keyName(of: $0, context: "test")?.device == reference })
            func opened() async throws -> [String?] {
                var unsealer = ArchiveUnsealer(table: "rejections", keys: try await store.archiveKeys())
                return try rows.dropFirst().compactMap { row in
                    try row[sealed].map { try unsealer.open($0, rowKey: row[id]!) }
                }
            }
            #expect(try await opened().allSatisfy { $0 != nil })

            let erasure = try await store.requestErasure(
                .device(DeviceID(rawValue: Person.device)!),
                in: Person.app,
                by: .appAPI
            )
            #expect(erasure.activities == 3)
            try await store.eraseWaitingActivities()
            #expect(try await kept() == 0)
            #expect(try await opened().allSatisfy { $0 == nil })
        }
    }

    @Test("a refusal that names no valid activity id is no one's: archived as it was, sealing nothing")
    func refusalOfNoOne() async throws {
        try await Self.withArchive { store, pool, _, _ in
            try await Person.recordPerson(store)
            let partition: String = try await pool.withConnection { connection in
                try connection.execute(
                    """
                    INSERT INTO rejections (id, app_id, activity_id, command, code, details)
                    VALUES (999999, \(Person.app.rawValue), 'not a valid id!', 'update', 'invalid_id', '{"given": "Ada"}')
                    """
                )
                return try connection.query(
                    "SELECT table_name FROM log_partitions WHERE parent = 'rejections' AND from_time <= now() AND now() < to_time"
                ).single!.decode("table_name")
            }
            let retiring = RetiringPartition(name: partition, parent: "rejections", from: "", to: "", archived: false)
            let csv: [UInt8] = try await pool.withConnection { connection in
                var csv: [UInt8] = []
                _ = try PartitionRetirementQueries.copy(retiring, connection, into: { csv += $0 })
                return csv
            }
            var records = CSVRecords()
            var rows: [[String?]] = []
            try csv.withUnsafeBytes { bytes in try records.feed(bytes) { rows.append($0) } }
            let header = try #require(rows.first?.map { $0 ?? "" })
            let (id, details) = (
                try #require(header.firstIndex(of: "id")), try #require(header.firstIndex(of: "details"))
            )
            let row = try #require(rows.first { $0[id] == "999999" })
            #expect(row[details] == #"{"given": "Ada"}"# && row.last! == nil)
            // The person's refusals are sealed all the same.
            #expect(rows.dropFirst().contains { $0[id] != "999999" && $0.last! != nil })
        }
    }

    /// The rows of a copy's CSV, with their sealed values opened in place by `keys`.
    static func opened(_ csv: [UInt8], keys: ArchiveKeyRing) throws -> [String] {
        var records = CSVRecords()
        var rows: [[String?]] = []
        try csv.withUnsafeBytes { bytes in try records.feed(bytes) { rows.append($0) } }
        var unsealer = ArchiveUnsealer(table: "events", keys: keys)
        return try rows.dropFirst().map { row in
            let sealed = try row.last!.flatMap { try unsealer.open($0, rowKey: row[0]!) }
            return row.dropLast().map { $0 ?? "" }.joined(separator: ",") + (sealed ?? "")
        }
    }

    /// Where an erasure meets a partition's copy: while the copy of a chunk holds its lock, or
    /// between two chunks, while a run of values copied waits to be sealed.
    enum Meeting: Sendable, CustomTestStringConvertible {
        case inChunk(Int)
        case afterChunk(Int)

        var testDescription: String {
            switch self {
            case .inChunk(let chunk): "in chunk \(chunk)"
            case .afterChunk(let chunk): "after chunk \(chunk)"
            }
        }
    }

    /// What the erasure that meets the copy erases: the person's device (its key destroyed), or
    /// one of its activities alone (its leaf punctured).
    enum Erased: Sendable, CaseIterable, CustomTestStringConvertible {
        case device
        case activity

        var scope: ErasureScope {
            switch self {
            case .device: .device(DeviceID(rawValue: Person.device)!)
            case .activity: .activity(ActivityID(rawValue: "ride-1")!)
            }
        }

        /// Values that must be gone, and values that must still open.
        var gone: [String] { self == .device ? Person.personal : [Person.pushToken(1)] }
        var kept: [String] { self == .device ? ["Other Person Stays"] : ["Other Person Stays", Person.pushToken(0)] }

        var testDescription: String { self == .device ? "a device" : "an activity" }
    }

    @Test(
        "an erasure that meets a partition being archived leaves nothing to open, wherever it meets it",
        arguments: [Meeting.inChunk(1), .inChunk(2), .inChunk(4), .afterChunk(1), .afterChunk(2)],
        Erased.allCases
    )
    func erasureDuringArchive(meeting: Meeting, erased: Erased) async throws {
        try await Self.withArchive { store, pool, _, _ in
            try await Person.recordPerson(store)
            let partition: String = try await pool.withConnection { connection in
                try connection.query(
                    "SELECT table_name FROM log_partitions WHERE parent = 'events' AND from_time <= now() AND now() < to_time"
                ).single!.decode("table_name")
            }
            let retiring = RetiringPartition(name: partition, parent: "events", from: "", to: "", archived: false)
            let erasure = Mutex<Task<Erasure, any Error>?>(nil)
            /// Asks for the erasure, once; returns when it was asked for, or at once.
            @Sendable func requestErasure(waiting: Bool) {
                guard erasure.withLock({ $0 == nil }) else { return }
                let requested = DispatchSemaphore(value: 0)
                erasure.withLock { task in
                    task = Task {
                        defer { requested.signal() }
                        return try await store.requestErasure(erased.scope, in: Person.app, by: .commandLine)
                    }
                }
                if waiting { requested.wait() } else { Thread.sleep(forTimeInterval: 0.3) }
            }
            let csv: [UInt8] = try await pool.withConnection { connection in
                var csv: [UInt8] = []
                var (writes, chunks) = (0, 0)
                _ = try PartitionRetirementQueries.copy(
                    retiring,
                    chunkRows: 3,
                    connection,
                    into: { bytes in
                        csv += bytes
                        writes += 1
                        // A row written during the chunk (the header came first, alone; a run's
                        // rows are written as it closes): the erasure is asked for while the
                        // chunk's transaction holds the copy's lock, and waits for it.
                        guard case .inChunk(let chunk) = meeting, writes > 1, chunks >= chunk - 1 else { return }
                        requestErasure(waiting: false)
                    },
                    pause: {
                        chunks += 1
                        guard case .afterChunk(let chunk) = meeting, chunks == chunk else { return }
                        requestErasure(waiting: true)
                    }
                )
                return csv
            }
            let requested = try await #require(erasure.withLock { $0 }).value
            try await store.eraseWaitingActivities()
            #expect(try await store.erasure(requested.id)?.finishedAt != nil)
            // Whatever the copy wrote, sealed or not, the keys left open nothing erased.
            let rows = try Self.opened(csv, keys: try await store.archiveKeys())
            let events: Int64 = try await pool.withConnection {
                try $0.query("SELECT count(*) AS n FROM events").single!.decode("n")
            }
            #expect(rows.count == events)
            for value in erased.gone {
                #expect(!rows.contains { $0.contains(value) }, "\(value) can be read from the archive")
            }
            for value in erased.kept {
                #expect(rows.contains { $0.contains(value) }, "\(value) cannot be read from the archive")
            }
        }
    }
}

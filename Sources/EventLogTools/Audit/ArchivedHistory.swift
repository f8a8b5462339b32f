import ActivityLifecycle
import CanonicalJSON
import Delivery
import EventStore
import LogArchive
import NIOPosix

/// What the archives of the tables beside the log hold about one stream: its pushes
/// (`deliveries`), its refused commands (`rejections`) and its dead tokens
/// (`push_token_invalidations`). Those tables are retired on their own time, so once a stream's
/// partition of the log is retired its rows are in archives, in the live tables, or in both.
struct ArchivedHistory {
    var deliveries: [DeliveryRecord] = []
    var rejections: [RecordedRejection] = []
    var deaths: [TokenDeath] = []

    /// The partitions whose archives are to be read: for each table, those it no longer reads
    /// (retired, or detached by a retirement that stopped before dropping them; the rows of one
    /// still attached are read from the live table, once).
    struct Sources {
        var deliveries: [RecordedPartition]
        var rejections: [RecordedPartition]
        var invalidations: [RecordedPartition]
    }

    private struct PassedTheStream: Error {}

    /// Reads, on a thread of its own, the archives in `folder` of `sources` for `delivered`'s
    /// stream, opening its sealed values with `keys`; throws when one the database recorded is
    /// not there.
    static func read(
        _ delivered: DeliveredStream,
        from sources: Sources,
        in folder: ArchiveFolder,
        keys: ArchiveKeyRing
    ) async throws
        -> ArchivedHistory
    {
        try await NIOThreadPool.singleton.runIfActive {
            let manifests = Dictionary(
                try folder.manifests().map { ("\($0.table)/\($0.partition)", $0) }
            ) { first, _ in first }
            func archives(of table: String, _ partitions: [RecordedPartition]) throws -> [ArchiveManifest] {
                try partitions.filter { !$0.live && $0.archive != nil }.map { partition in
                    guard let manifest = manifests["\(table)/\(partition.name)"] else {
                        throw ArchiveFolder.Problem(
                            description:
                                "partition \(partition.name) was archived, but its archive is not in \(folder.path)"
                        )
                    }
                    return manifest
                }
            }
            var history = ArchivedHistory()
            for manifest in try archives(of: "deliveries", sources.deliveries) {
                history.deliveries += try deliveries(of: delivered, in: manifest, folder)
            }
            for manifest in try archives(of: "rejections", sources.rejections) {
                history.rejections += try rejections(of: delivered.stream, in: manifest, folder, keys: keys)
            }
            for manifest in try archives(of: "push_token_invalidations", sources.invalidations) {
                history.deaths += try deaths(of: delivered.stream, in: manifest, folder, keys: keys)
            }
            return history
        }
    }

    /// An archive of `deliveries` holds its rows by position: read until the stream's last
    /// event has been passed.
    private static func deliveries(
        of delivered: DeliveredStream,
        in manifest: ArchiveManifest,
        _ folder: ArchiveFolder
    ) throws -> [DeliveryRecord] {
        var columns: ArchivedColumns?
        var records: [DeliveryRecord] = []
        do {
            try folder.read(manifest) { header, fields in
                if columns == nil {
                    columns = try ArchivedColumns(
                        header: header,
                        needing: ["position", "outcome", "attempt", "attempted_at"]
                    )
                }
                let row = columns!.row(fields)
                let position: Int64 = try row.number("position")
                guard position <= delivered.lastPosition else { throw PassedTheStream() }
                guard let version = delivered.version(at: position) else { return }
                let tokenPosition: Int64? = try row.optionalNumber("token_position")
                records.append(
                    DeliveryRecord(
                        position: position,
                        stream: delivered.stream,
                        version: version,
                        outcome: try DeliveryRecord.Outcome(stored: try row.text("outcome")),
                        attempt: try row.number("attempt"),
                        apnsID: row.optional("apns_id"),
                        deviceToken: delivered.deviceToken(
                            recorded: row.optional("device_token"),
                            registeredAt: tokenPosition,
                            position: position
                        ),
                        tokenPosition: tokenPosition,
                        channelID: row.optional("channel_id"),
                        priority: try row.optionalNumber("priority", as: Int.self).flatMap(Priority.init(rawValue:)),
                        status: try row.optionalNumber("status"),
                        reason: row.optional("reason"),
                        latency: try row.optionalNumber("latency_us", as: Int64.self).map { .microseconds($0) },
                        attemptedAt: try row.time("attempted_at")
                    )
                )
            }
        } catch is PassedTheStream {}
        return records
    }

    private static func rejections(
        of stream: StreamID,
        in manifest: ArchiveManifest,
        _ folder: ArchiveFolder,
        keys: ArchiveKeyRing
    ) throws -> [RecordedRejection] {
        var columns: ArchivedColumns?
        var unsealer = ArchiveUnsealer(table: "rejections", keys: keys)
        var rejections: [RecordedRejection] = []
        try folder.read(manifest) { header, fields in
            if columns == nil {
                columns = try ArchivedColumns(
                    header: header,
                    needing: ["id", "app_id", "activity_id", "command", "code", "details", "occurred_at"]
                )
            }
            let row = columns!.row(fields)
            guard row.optional("activity_id") == stream.activity.rawValue, try row.text("app_id") == stream.app.rawValue
            else { return }
            let id: Int64 = try row.number("id")
            let details = try row.unsealed("details", rowKey: "\(id)", with: &unsealer).value
            rejections.append(
                RecordedRejection(
                    app: stream.app,
                    activity: stream.activity.rawValue,
                    command: try row.text("command"),
                    code: try row.text("code"),
                    details: try JSONParser.parseObject(Array(details.utf8)).members,
                    occurredAt: try row.time("occurred_at")
                )
            )
        }
        return rejections
    }

    private static func deaths(
        of stream: StreamID,
        in manifest: ArchiveManifest,
        _ folder: ArchiveFolder,
        keys: ArchiveKeyRing
    ) throws -> [TokenDeath] {
        var columns: ArchivedColumns?
        var unsealer = ArchiveUnsealer(table: "push_token_invalidations", keys: keys)
        var deaths: [TokenDeath] = []
        try folder.read(manifest) { header, fields in
            if columns == nil {
                columns = try ArchivedColumns(
                    header: header,
                    needing: [
                        "id", "app_id", "activity_id", "device_token", "status", "reason", "invalid_since",
                        "recorded_at",
                    ]
                )
            }
            let row = columns!.row(fields)
            guard try row.text("activity_id") == stream.activity.rawValue, try row.text("app_id") == stream.app.rawValue
            else { return }
            let id: Int64 = try row.number("id")
            let token = try row.unsealed("device_token", rowKey: "\(id)", with: &unsealer).value
            deaths.append(
                TokenDeath(
                    token: token,
                    status: try row.number("status"),
                    reason: try row.text("reason"),
                    invalidSince: try row.time("invalid_since"),
                    recordedAt: try row.time("recorded_at")
                )
            )
        }
        return deaths
    }
}

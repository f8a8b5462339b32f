public import ActivityLifecycle
public import EventStore
public import Foundation
public import LogArchive
import NIOPosix

/// An activity's stream found in an archive of a retired partition.
public struct ArchivedStream: Sendable {
    /// The archive that holds it.
    public let manifest: ArchiveManifest
    public let events: [StoredEvent]
    /// The keys its values were opened with: its leaf's and its device's.
    public let keys: ArchiveKeyRing

    /// The reference its request names its device by, when its device's key was erased (an
    /// opened request names the device itself).
    public var deviceReference: UUID? {
        guard case .requested(let request)? = events.first?.event.payload,
            let device = request.deviceID?.rawValue, device.hasPrefix("erased:")
        else { return nil }
        return UUID(uuidString: String(device.dropFirst("erased:".count)))
    }
}

/// Finds an activity in the archives of the log: what `liveline audit` reads once the activity's
/// partition was retired. The archives hold each stream's events together, in version order,
/// so an archive is read only until the stream has been passed (whatever order the streams are
/// in: the database's collation of their ids).
public enum ArchiveSearch {
    private struct PassedTheStream: Error {}

    /// The stream in the newest archive that holds it (an id may be used again after its first
    /// stream was retired), its data opened with the keys `keys` gives for the devices its
    /// sealed runs name (read redacted without), or `nil`. Reads files on a thread of its own.
    public static func find(
        _ stream: StreamID,
        in folder: ArchiveFolder,
        keys: @Sendable (Set<UUID>) async throws -> ArchiveKeyRing
    ) async throws -> ArchivedStream? {
        let found = try await NIOThreadPool.singleton.runIfActive {
            () -> (ArchiveManifest, ArchivedEventColumns, [[String?]])? in
            for manifest in try folder.manifests().filter({ $0.table == "events" }).reversed() {
                if let (columns, rows) = try rows(of: stream, from: manifest, in: folder) {
                    return (manifest, columns, rows)
                }
            }
            return nil
        }
        guard let (manifest, columns, rows) = found else { return nil }
        let ring = try await keys(Set(try rows.compactMap { try columns.sealingDevice($0) }))
        let events = try await NIOThreadPool.singleton.runIfActive {
            var unsealer = ArchiveUnsealer(table: "events", keys: ring)
            return try rows.map { try columns.decode($0, with: &unsealer).event }
        }
        return ArchivedStream(manifest: manifest, events: events, keys: ring)
    }

    /// The stream's rows in one archive, as written, with its columns; `nil` when it holds none.
    private static func rows(
        of stream: StreamID,
        from manifest: ArchiveManifest,
        in folder: ArchiveFolder
    ) throws
        -> (ArchivedEventColumns, [[String?]])?
    {
        let key = [stream.app.rawValue, stream.activity.rawValue]
        var columns: ArchivedEventColumns?
        var rows: [[String?]] = []
        do {
            try folder.read(manifest) { header, row in
                if columns == nil { columns = try ArchivedEventColumns(header: header) }
                if try columns!.streamKey(row) == key {
                    rows.append(row)
                } else if !rows.isEmpty {
                    throw PassedTheStream()
                }
            }
        } catch is PassedTheStream {}
        guard let columns, !rows.isEmpty else { return nil }
        return (columns, rows)
    }
}

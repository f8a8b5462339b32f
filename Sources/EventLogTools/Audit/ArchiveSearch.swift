public import ActivityLifecycle
public import EventStore
public import LogArchive
import NIOPosix

/// An activity's stream found in an archive of a retired partition.
public struct ArchivedStream: Sendable {
    /// The archive that holds it.
    public let manifest: ArchiveManifest
    public let events: [StoredEvent]
}

/// Finds an activity in the archives of the log: what `liveline audit` reads once the activity's
/// partition was retired. The archives hold each stream's events together, in version order,
/// so an archive is read only until the stream has been passed (whatever order the streams are
/// in: the database's collation of their ids).
public enum ArchiveSearch {
    private struct PassedTheStream: Error {}

    /// The stream in the newest archive that holds it (an id may be used again after its first
    /// stream was retired), its data opened with its keys in `keys` (read redacted without), or
    /// `nil`. Reads files on a thread of its own.
    public static func find(
        _ stream: StreamID,
        in folder: ArchiveFolder,
        keys: ArchiveKeyRing
    ) async throws -> ArchivedStream? {
        try await NIOThreadPool.singleton.runIfActive {
            for manifest in try folder.manifests().filter({ $0.table == "events" }).reversed() {
                let events = try read(stream, from: manifest, in: folder, keys: keys)
                if !events.isEmpty { return ArchivedStream(manifest: manifest, events: events) }
            }
            return nil
        }
    }

    private static func read(
        _ stream: StreamID,
        from manifest: ArchiveManifest,
        in folder: ArchiveFolder,
        keys: ArchiveKeyRing
    ) throws
        -> [StoredEvent]
    {
        let key = [stream.app.rawValue, stream.activity.rawValue]
        var columns: ArchivedEventColumns?
        var unsealer = ArchiveUnsealer(table: "events", keys: keys)
        var events: [StoredEvent] = []
        do {
            try folder.read(manifest) { header, row in
                if columns == nil { columns = try ArchivedEventColumns(header: header) }
                // Another stream's data is sealed under keys not given: it is not opened. A
                // stream's sealed runs are its own, the first in its first row.
                if try columns!.streamKey(row) == key {
                    events.append(try columns!.decode(row, with: &unsealer).event)
                } else if !events.isEmpty {
                    throw PassedTheStream()
                }
            }
        } catch is PassedTheStream {}
        return events
    }
}

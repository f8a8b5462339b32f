import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import LogArchive

/// What `liveline verify --archive` found in the archives of the log's retired partitions.
public struct ArchiveOutcome: Hashable, Sendable, Encodable {
    public var folder: String
    /// Archives of the log read, and the events and streams in them.
    public var archives = 0
    public var events = 0
    public var streams = 0
    /// Archived streams an erasure reached: read redacted, folded all the same.
    public var erasedStreams = 0
    /// Partitions retired (or being retired) without an archive (a retention without
    /// `LIVELINE_ARCHIVE_DIR`).
    public var retiredUnarchived: [String] = []
    /// What does not hold: an archive missing or not matching its manifest or the database's
    /// record, a gap between partitions, a stream that is not whole or not dismissed.
    public var problems: [String] = []

    public init(folder: String) {
        self.folder = folder
    }
}

/// Checks the archives of the log against what the database recorded when it archived each
/// partition, and reads every archived stream: folded by `check` like a live one, with its
/// openings and closings kept for the cap history.
struct ArchiveCheck {
    let folder: ArchiveFolder
    let lifecycle: Lifecycle
    /// The keys the archives' sealed values open with (`EventStore.archiveKeys`).
    let keys: ArchiveKeyRing

    struct Result {
        var outcome: ArchiveOutcome
        var findings: [Finding] = []
        /// Openings and closings of archived streams, in commit order (unrecorded times first).
        var moves: [CapHistoryEntry] = []
    }

    func run(recorded: [RecordedPartition], check: ([StoredEvent]) -> [Finding]) -> Result {
        var result = Result(outcome: ArchiveOutcome(folder: folder.path))
        // The partitions follow one another: none was lost from the record.
        for (earlier, later) in zip(recorded, recorded.dropFirst()) where earlier.to != later.from {
            result.outcome.problems.append(
                "partition \(later.name) begins at \(later.from), not where \(earlier.name) ends (\(earlier.to))"
            )
        }
        let manifests: [ArchiveManifest]
        do {
            manifests = try folder.manifests().filter { $0.table == "events" }
        } catch {
            result.outcome.problems.append("\(error)")
            return result
        }
        let byPartition = Dictionary(manifests.map { ($0.partition, $0) }) { first, _ in first }
        // The live log holds the rows of the partitions `events` still reads; the archives hold
        // the others': retired, or detached by a retirement that stopped before it dropped them.
        // An archive of a partition still read (a retirement stopped after writing it) is not
        // read: its rows are counted once, in the live log.
        for partition in recorded where !partition.live {
            guard let text = partition.archive else {
                result.outcome.retiredUnarchived.append(partition.name)
                continue
            }
            guard let manifest = byPartition[partition.name] else {
                result.outcome.problems.append(
                    "partition \(partition.name) was archived, but its archive is not in \(folder.path)"
                )
                continue
            }
            guard let expected = try? ArchiveManifest.decode(Data(text.utf8)), expected.file == manifest.file,
                expected.rows == manifest.rows
            else {
                result.outcome.problems.append(
                    "the archive of \(partition.name) is not the one the database recorded when it archived it"
                )
                continue
            }
            read(manifest, into: &result, check: check)
        }
        let known = Set(recorded.filter { $0.archive != nil }.map(\.name))
        for manifest in manifests where !known.contains(manifest.partition) {
            result.outcome.problems.append(
                "\(folder.path)/\(manifest.partition) is not a partition this database archived"
            )
        }
        // Stable: an opening stays before a closing of the same commit.
        result.moves.sort {
            ($0.committedAt?.microsecondsSince1970 ?? .min) < ($1.committedAt?.microsecondsSince1970 ?? .min)
        }
        return result
    }

    /// Reads one archive, stream by stream (it holds them together, in version order).
    private func read(_ manifest: ArchiveManifest, into result: inout Result, check: ([StoredEvent]) -> [Finding]) {
        var columns: ArchivedEventColumns?
        var unsealer = ArchiveUnsealer(table: "events", keys: keys)
        var stream: [(event: StoredEvent, committedAt: Timestamp?, unsealing: Unsealing)] = []
        func finish() {
            guard !stream.isEmpty else { return }
            take(stream, from: manifest, into: &result, check: check)
            stream.removeAll(keepingCapacity: true)
        }
        do {
            try folder.read(manifest) { header, row in
                if columns == nil { columns = try ArchivedEventColumns(header: header) }
                let decoded = try columns!.decode(row, with: &unsealer)
                if let last = stream.last, last.event.stream != decoded.event.stream { finish() }
                stream.append(decoded)
                result.outcome.events += 1
            }
            finish()
            result.outcome.archives += 1
        } catch {
            result.outcome.problems.append("\(manifest.partition): \(error)")
        }
    }

    private func take(
        _ stream: [(event: StoredEvent, committedAt: Timestamp?, unsealing: Unsealing)],
        from manifest: ArchiveManifest,
        into result: inout Result,
        check: ([StoredEvent]) -> [Finding]
    ) {
        let events = stream.map(\.event)
        let id = events[0].stream
        result.outcome.streams += 1
        // Its key was erased, or an erasure had redacted it before it was archived (its leaf
        // punctured, or the device it names by reference erased).
        let opened = stream.contains { $0.unsealing == .opened }
        if stream.contains(where: { $0.unsealing == .erased })
            || (!opened
                && (keys.wasErased(app: id.app.rawValue, activity: id.activity.rawValue)
                    || Self.erasedDevice(of: events[0].event, in: keys)))
        {
            result.outcome.erasedStreams += 1
        }
        result.findings += check(events)
        if let activity = try? lifecycle.fold(events.map(\.event), of: id), activity.state != .dismissed {
            result.outcome.problems.append(
                "\(id) in \(manifest.partition) is \(activity.state.rawValue): a retired stream is dismissed"
            )
        }
        if case .requested(let request) = events[0].event.payload {
            result.moves.append(
                CapHistoryEntry(committedAt: stream[0].committedAt, change: .opened(id, device: request.deviceID))
            )
        }
        if let closing = stream.first(where: { [.ended, .dismissed].contains($0.event.event.type) }) {
            result.moves.append(CapHistoryEntry(committedAt: closing.committedAt, change: .closed(id)))
        }
    }

    /// Whether the stream's request names its device by a reference (`erased:<reference>`, as an
    /// archive writes every device) whose key an erasure destroyed.
    private static func erasedDevice(of event: ActivityEvent, in keys: ArchiveKeyRing) -> Bool {
        guard case .requested(let request) = event.payload, let device = request.deviceID?.rawValue,
            device.hasPrefix("erased:"), let reference = UUID(uuidString: String(device.dropFirst("erased:".count)))
        else { return false }
        return keys.wasErased(device: reference)
    }
}

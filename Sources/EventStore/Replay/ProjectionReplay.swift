public import ActivityLifecycle
import Postgres

/// Which part of the log a replay rebuilds.
public enum ReplayScope: Hashable, Sendable {
    case everything
    case app(AppID)

    var app: AppID? {
        if case .app(let app) = self { app } else { nil }
    }
}

/// An activity whose live projection differs from the fold of its stream; a side is `nil` when
/// it has no row.
public struct ProjectionMismatch: Hashable, Sendable {
    public let stream: StreamID
    public let rebuilt: StoredActivity?
    public let live: StoredActivity?
}

/// An open count the caps use that differs from the open activities of the rebuilt projection:
/// an app's (`device` nil), a device's, or the global one (both nil).
public struct OpenCountMismatch: Hashable, Sendable {
    public let app: AppID?
    public let device: DeviceID?
    public let rebuilt: Int
    public let live: Int
}

/// What a replay found and did.
public struct ReplayReport: Sendable {
    /// Events read in the snapshot, and the streams they make.
    public internal(set) var events = 0
    public internal(set) var streams = 0
    /// Streams the state machine refuses to fold. Their projections are left as they are, and a
    /// replay that finds any swaps nothing.
    public internal(set) var unfoldable: [CorruptionError] = []
    /// How many activities' live rows differed from the log in the snapshot.
    public internal(set) var changedActivities = 0
    /// Up to `ProjectionReplay.reportedMismatches` of them (when comparing).
    public internal(set) var mismatches: [ProjectionMismatch] = []
    /// Open counts that differed (when comparing).
    public internal(set) var countMismatches: [OpenCountMismatch] = []
    /// Whether the rebuilt projection replaced the live one.
    public internal(set) var swapped = false
    /// Events appended while the snapshot was being rebuilt, folded in before the swap.
    public internal(set) var caughtUpEvents = 0
    /// How long appends waited at the gate for the swap.
    public internal(set) var gateHeld: Duration = .zero

    public var isConsistent: Bool { unfoldable.isEmpty && changedActivities == 0 && countMismatches.isEmpty }
}

/// Rebuilds the projection (activities, their deadlines, the open counts of the caps) from the
/// log through the strict state machine, while the server keeps serving.
///
/// 1. In one REPEATABLE READ snapshot: the log is read stream by stream through a server-side
///    cursor and folded, and the rows are sent with COPY to scratch tables; then the activities
///    whose live row differs are marked, in the same snapshot, so the comparison is exact.
/// 2. To compare (`swap: false`), the differences are reported and nothing changes.
/// 3. To swap, one transaction closes the append gate (appends wait at it, holding nothing),
///    folds again the streams that received events the snapshot did not see, writes the changed
///    rows, recounts the open counts and respreads the caps, and commits. Appends then go on;
///    none was lost, because every event is either in the snapshot or caught up under the gate.
public struct ProjectionReplay: Sendable {
    public static let reportedMismatches = 10_000

    public let store: EventStore
    public let scope: ReplayScope
    public let batchSize: Int

    public init(store: EventStore, scope: ReplayScope = .everything, batchSize: Int = 10_000) {
        precondition(batchSize > 0, "a batch holds at least one event")
        self.store = store
        self.scope = scope
        self.batchSize = batchSize
    }

    /// Rebuilds, then swaps the result in (`swap`) or only compares it with the live projection.
    /// `progress` gets the events read so far and the total, from the thread doing the work.
    public func run(
        swap: Bool,
        progress: @escaping @Sendable (Int, Int) -> Void = { _, _ in }
    ) async throws
        -> ReplayReport
    {
        try await store.pool.withConnection { connection in
            guard try ReplayQueries.tryLock(connection) else { throw EventStoreError.replayInProgress }
            defer { try? ReplayQueries.unlock(connection) }
            var report = ReplayReport()
            let snapshot = try connection.transaction(isolation: .repeatableRead) { connection in
                try rebuildSnapshot(into: &report, progress: progress, connection)
            }
            guard swap, report.unfoldable.isEmpty else { return report }
            try connection.transaction { connection in
                let started = ContinuousClock.now
                try ReplayQueries.closeGate(connection)
                let appended = try ReplayQueries.streamsAppended(since: snapshot, app: scope.app, connection)
                if !appended.isEmpty {
                    try ReplayQueries.openCursor(on: appended, connection)
                    let caughtUp = try foldCursor(catchingUp: true, connection)
                    if let corrupt = caughtUp.unfoldable.first { throw EventStoreError.corruptStream(corrupt) }
                    report.caughtUpEvents = caughtUp.events
                }
                try ReplayQueries.swap(app: scope.app, connection)
                report.gateHeld = ContinuousClock.now - started
            }
            report.swapped = true
            return report
        }
    }

    /// Step 1; returns the snapshot, for the catch-up.
    private func rebuildSnapshot(
        into report: inout ReplayReport,
        progress: @Sendable (Int, Int) -> Void,
        _ connection: Connection
    ) throws -> String {
        let snapshot = try ReplayQueries.snapshot(connection)
        try ReplayQueries.clearScratch(connection)
        let total = try ReplayQueries.eventCount(app: scope.app, connection)
        try ReplayQueries.openCursorOnLog(app: scope.app, connection)
        let folded = try foldCursor(catchingUp: false, connection) { progress($0, total) }
        try ReplayQueries.keepLive(folded.unfoldable.map(\.stream), connection)
        report.events = folded.events
        report.streams = folded.streams
        report.unfoldable = folded.unfoldable
        report.changedActivities = try ReplayQueries.markChanges(app: scope.app, connection)
        report.mismatches = try ReplayQueries.changes(limit: Self.reportedMismatches, connection)
        report.countMismatches = try ReplayQueries.countMismatches(app: scope.app, connection)
        return snapshot
    }

    /// Reads `liveline_log_events` to the end, folds each stream and sends the rows with COPY a
    /// batch at a time: into `activities_replay`, or, when `catchingUp`, in place of the rows
    /// there, marking those activities as changed.
    private func foldCursor(
        catchingUp: Bool,
        _ connection: Connection,
        progress: (Int) -> Void = { _ in }
    ) throws -> (events: Int, streams: Int, unfoldable: [CorruptionError]) {
        var unfoldable: [CorruptionError] = []
        let lifecycle = store.lifecycle
        let (events, streams) = try StreamCursor.read(
            batchSize: batchSize,
            connection,
            empty: FoldedStreams()
        ) { part, stream in
            do throws(CorruptionError) {
                ProjectionRow.copy(try lifecycle.rebuild(stream), into: &part.rows)
            } catch {
                part.unfoldable.append(error)
            }
        } afterBatch: { parts, events in
            unfoldable += parts.flatMap(\.unfoldable)
            if parts.contains(where: { !$0.rows.isEmpty }) {
                try ReplayQueries.copy(parts.map(\.rows), staged: catchingUp, connection)
            }
            progress(events)
        }
        if catchingUp { try ReplayQueries.mergeStaged(connection) }
        return (events, streams, unfoldable)
    }
}

/// Folded streams: their projection rows, ready for COPY, and those that do not fold.
private struct FoldedStreams: Sendable {
    var rows = CopyTextRows()
    var unfoldable: [CorruptionError] = []
}

extension Lifecycle {
    /// The projection of a stored stream (at least one event), folded strictly.
    public func rebuild(_ events: [StoredEvent]) throws(CorruptionError) -> StoredActivity {
        let stream = events[0].stream
        // A stream with events always folds to an activity.
        let activity = try fold(events.map(\.event), of: stream)!
        return StoredActivity(stream: stream, activity: activity, nextDeadline: nextDeadline(of: activity))
    }
}

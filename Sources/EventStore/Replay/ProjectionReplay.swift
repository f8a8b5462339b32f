import ActivityLifecycle
import Postgres

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
        try await store.withConnection { connection in
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
                    try LogCursorQueries.openCursor(on: appended, connection)
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
        try LogCursorQueries.openCursorOnLog(app: scope.app, connection)
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

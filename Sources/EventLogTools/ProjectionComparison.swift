public import ActivityLifecycle
public import EventStore

/// A field in which the live projection of an activity differs from the fold of its stream.
public struct ProjectionDifference: Hashable, Sendable, Encodable, CustomStringConvertible {
    public let app: AppID
    public let activity: ActivityID
    /// A field of the activity (`state`, `content`, `nextDeadline`, …), or `projection` when a
    /// row is missing or has no events, or `log` when the stream cannot be folded.
    public let field: String
    /// What the log says.
    public let expected: String
    /// What the projection holds.
    public let actual: String

    public init(stream: StreamID, field: String, expected: String, actual: String) {
        (app, activity) = (stream.app, stream.activity)
        self.field = field
        self.expected = expected
        self.actual = actual
    }

    public var stream: StreamID { StreamID(app: app, activity: activity) }

    public var description: String { "\(stream): \(field): the log says \(expected), the projection has \(actual)" }
}

/// Folds every stream of the log, as a replay would, and compares the result with the live
/// projection, without changing anything: every difference names the activity, the field, what
/// the log says and what the projection holds.
public struct ProjectionComparison: Sendable {
    public let store: EventStore
    public let batchSize: Int

    public init(store: EventStore, batchSize: Int = 10_000) {
        self.store = store
        self.batchSize = batchSize
    }

    public func differences(progress: (Int) -> Void = { _ in }) async throws -> [ProjectionDifference] {
        var differences: [ProjectionDifference] = []
        var folded: [(StreamID, Result<StoredActivity, CorruptionError>)] = []
        func compareFolded() async throws {
            let live = try await store.activities(folded.map(\.0))
            let byStream = Dictionary(live.map { ($0.stream, $0) }) { first, _ in first }
            for (stream, result) in folded {
                differences += compare(result, byStream[stream], stream)
            }
            folded.removeAll(keepingCapacity: true)
        }
        _ = try await StreamReader(store: store, batchSize: batchSize).forEachStream(progress: progress) { events in
            folded.append((events[0].stream, fold(events)))
            if folded.count >= 500 { try await compareFolded() }
        }
        try await compareFolded()
        for stream in try await store.projectionsWithoutEvents(limit: 1_000) {
            differences.append(
                ProjectionDifference(stream: stream, field: "projection", expected: "no activity", actual: "a row")
            )
        }
        return differences
    }

    private func fold(_ events: [StoredEvent]) -> Result<StoredActivity, CorruptionError> {
        let lifecycle = store.lifecycle
        let stream = events[0].stream
        return Result { () throws(CorruptionError) in
            // A stream read from the log has at least one event, so the fold has an activity.
            let activity = try lifecycle.fold(events.map(\.event), of: stream)!
            return StoredActivity(
                stream: stream,
                activity: activity,
                nextDeadline: lifecycle.nextDeadline(of: activity)
            )
        }
    }

    private func compare(
        _ folded: Result<StoredActivity, CorruptionError>,
        _ actual: StoredActivity?,
        _ stream: StreamID
    ) -> [ProjectionDifference] {
        let expected: StoredActivity
        switch folded {
        case .failure(let corruption):
            return [
                ProjectionDifference(
                    stream: stream,
                    field: "log",
                    expected: "a stream the state machine can fold (v\(corruption.version): \(corruption.reason))",
                    actual: actual.map { "version \($0.activity.version)" } ?? "no row"
                )
            ]
        case .success(let activity):
            expected = activity
        }
        guard let actual else {
            return [
                ProjectionDifference(
                    stream: stream,
                    field: "projection",
                    expected: "version \(expected.activity.version)",
                    actual: "no row"
                )
            ]
        }
        guard expected != actual else { return [] }
        var differences = zip(
            Mirror(reflecting: expected.activity).children,
            Mirror(reflecting: actual.activity).children
        )
        .compactMap { left, right -> ProjectionDifference? in
            let (fromLog, inProjection) = (String(describing: left.value), String(describing: right.value))
            guard fromLog != inProjection, let field = left.label else { return nil }
            return ProjectionDifference(stream: stream, field: field, expected: fromLog, actual: inProjection)
        }
        if expected.nextDeadline != actual.nextDeadline {
            differences.append(
                ProjectionDifference(
                    stream: stream,
                    field: "nextDeadline",
                    expected: String(describing: expected.nextDeadline),
                    actual: String(describing: actual.nextDeadline)
                )
            )
        }
        return differences
    }
}

public import ActivityLifecycle

/// A way in which the live projection differs from what the log says: a field of an
/// activity's row, a missing or extra row, a stream that cannot be folded, or an open count.
public struct ProjectionDifference: Hashable, Sendable, Encodable, CustomStringConvertible {
    /// `nil` only for the service-wide open count.
    public let app: AppID?
    /// `nil` for an open count.
    public let activity: ActivityID?
    /// A field of the activity (`state`, `content`, `nextDeadline`, …), `projection` when a row
    /// is missing or has no events, `log` when the stream cannot be folded; or `openCount` (the
    /// app's, or the service's) or `openCount(device <id>)`.
    public let field: String
    /// What the log says.
    public let expected: String
    /// What the projection holds.
    public let actual: String

    public var description: String {
        let subject =
            switch (app, activity) {
            case (let app?, let activity?): "\(StreamID(app: app, activity: activity))"
            case (let app?, nil): "app \(app)"
            case (nil, _): "service"
            }
        return "\(subject): \(field): the log says \(expected), the projection has \(actual)"
    }

    /// Every difference a replay found, field by field.
    public static func all(in report: ReplayReport) -> [ProjectionDifference] {
        report.unfoldable.map(unfoldable) + report.mismatches.flatMap(fields) + report.countMismatches.map(count)
    }

    private static func unfoldable(_ corruption: CorruptionError) -> ProjectionDifference {
        ProjectionDifference(
            app: corruption.stream.app,
            activity: corruption.stream.activity,
            field: "log",
            expected: "a stream the state machine can fold (v\(corruption.version): \(corruption.reason))",
            actual: "a row left as it is"
        )
    }

    private static func count(_ mismatch: OpenCountMismatch) -> ProjectionDifference {
        ProjectionDifference(
            app: mismatch.app,
            activity: nil,
            field: mismatch.device.map { "openCount(device \($0))" } ?? "openCount",
            expected: "\(mismatch.rebuilt)",
            actual: "\(mismatch.live)"
        )
    }

    private static func fields(_ mismatch: ProjectionMismatch) -> [ProjectionDifference] {
        func difference(_ field: String, _ expected: String, _ actual: String) -> ProjectionDifference {
            ProjectionDifference(
                app: mismatch.stream.app,
                activity: mismatch.stream.activity,
                field: field,
                expected: expected,
                actual: actual
            )
        }
        guard let rebuilt = mismatch.rebuilt else {
            return [difference("projection", "no activity", "a row")]
        }
        guard let live = mismatch.live else {
            return [difference("projection", "version \(rebuilt.activity.version)", "no row")]
        }
        var differences = zip(
            Mirror(reflecting: rebuilt.activity).children,
            Mirror(reflecting: live.activity).children
        )
        .compactMap { expected, actual -> ProjectionDifference? in
            let (fromLog, inProjection) = (String(describing: expected.value), String(describing: actual.value))
            guard fromLog != inProjection, let field = expected.label else { return nil }
            return difference(field, fromLog, inProjection)
        }
        if rebuilt.nextDeadline != live.nextDeadline {
            differences.append(
                difference(
                    "nextDeadline",
                    String(describing: rebuilt.nextDeadline),
                    String(describing: live.nextDeadline)
                )
            )
        }
        // The rows differ in the database even when what they decode to does not (a column
        // edited outside Liveline, for instance): say so rather than hide it.
        return differences.isEmpty ? [difference("row", "the row the log makes", "another row")] : differences
    }
}

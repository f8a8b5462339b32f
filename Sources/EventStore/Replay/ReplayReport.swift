public import ActivityLifecycle

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

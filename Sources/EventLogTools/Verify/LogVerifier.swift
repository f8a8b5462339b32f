public import ActivityLifecycle
public import CanonicalJSON
public import EventStore
public import LogArchive
import NIOPosix

/// Something `liveline verify` found wrong in the log.
public struct Finding: Hashable, Sendable, Encodable, CustomStringConvertible {
    public enum Rule: String, Hashable, Sendable, Encodable {
        /// An event the state machine could not have produced: a version gap, an illegal
        /// transition, content over the size limit, time going backwards, …
        case transition
        /// A time-driven transition overdue by more than the slack, or applied later than that
        /// (the worker did not run in time).
        case deadline
        /// An opening that took an app's, a device's or the global count of open activities above
        /// the cap in force when it committed.
        case cap
    }

    public let app: AppID
    public let activity: ActivityID
    public let version: Int
    public let rule: Rule
    public let evidence: String

    public init(stream: StreamID, version: Int, rule: Rule, evidence: String) {
        (app, activity) = (stream.app, stream.activity)
        self.version = version
        self.rule = rule
        self.evidence = evidence
    }

    public var stream: StreamID { StreamID(app: app, activity: activity) }

    public var description: String { "\(stream) v\(version): \(rule.rawValue): \(evidence)" }
}

/// Checks the whole log, one stream at a time, in one snapshot (memory stays that of a batch
/// and a stream): every stream folds strictly through the state machine — contiguous versions,
/// legal transitions, sizes, time order — and no time-driven transition is overdue by more than
/// `slack` at `now`, or was recorded more than `slack` after it was due. Then the open counts are replayed in commit order
/// against the caps in force (`CapHistoryCheck`), when the database records commit times, and
/// the reloads' tables are checked (`ReloadCheck`).
public struct LogVerifier: Sendable {
    public let store: EventStore
    public let now: Timestamp
    public let slack: Duration
    public let batchSize: Int

    public init(store: EventStore, now: Timestamp, slack: Duration = .seconds(60), batchSize: Int = 10_000) {
        self.store = store
        self.now = now
        self.slack = slack
        self.batchSize = batchSize
    }

    public struct Summary: Hashable, Sendable, Encodable {
        public var events = 0
        public var streams = 0
        /// Streams an erasure redacted (`EventStore.requestErasure`): folded like the others,
        /// their values gone by request, not damaged.
        public var erasedStreams = 0
        public var findings: [Finding] = []
        public var caps = CapHistoryCheck.Outcome()
        /// What the archives held, when they were checked too.
        public var archive: ArchiveOutcome?
        /// Widget and control reloads: the tokens' slots against their changes, the outcomes
        /// against their requests.
        public var reloads = ReloadCheck()

        /// Whether anything is wrong, in the log, its archives or the reloads' tables.
        public var isClean: Bool {
            findings.isEmpty && (archive?.problems.isEmpty ?? true) && reloads.problems.isEmpty
        }
    }

    /// Reads the log — and the archives of its retired partitions in `archive`, when given —
    /// and returns what is wrong; `progress` is told the live events read so far.
    public func verify(
        archive: ArchiveFolder? = nil,
        progress: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws -> Summary {
        var archived: ArchiveCheck.Result?
        if let archive {
            let recorded = try await store.recordedPartitions(of: "events")
            let check = ArchiveCheck(folder: archive, lifecycle: store.lifecycle, keys: try await store.archiveKeys())
            archived = try await NIOThreadPool.singleton.runIfActive {
                check.run(recorded: recorded, check: self.check)
            }
        }
        let (findings, events, streams) = try await store.foldStreams(
            from: [Finding](),
            batchSize: batchSize,
            progress: progress,
            fold: { findings, stream in findings += check(stream) },
            merge: { $0 += $1 }
        )
        let caps = try await checkCapHistory(archived: archived?.moves ?? [])
        return Summary(
            events: events,
            streams: streams,
            erasedStreams: try await store.erasedStreamCount(),
            findings: (archived?.findings ?? []) + findings + caps.findings,
            caps: caps.outcome,
            archive: archived?.outcome,
            reloads: try await store.checkReloads()
        )
    }

    /// Replays the open counts in commit order, archived openings and closings among the live
    /// ones, when the database records commit times.
    func checkCapHistory(
        archived: [CapHistoryEntry] = []
    ) async throws -> (findings: [Finding], outcome: CapHistoryCheck.Outcome) {
        guard try await store.recordsCommitTimestamps() else {
            return ([], .init(notChecked: "the database does not record commit times (track_commit_timestamp is off)"))
        }
        let check = try await store.foldCapHistory(into: CapHistoryCheck(), archived: archived, batchSize: batchSize) {
            $0.apply($1)
        }
        return (check.findings, check.outcome)
    }

    /// The findings of one stream.
    func check(_ events: [StoredEvent]) -> [Finding] {
        let id = events[0].stream
        let lifecycle = store.lifecycle
        let activity: Activity?
        do {
            activity = try lifecycle.fold(events.map(\.event), of: id)
        } catch {
            return [Finding(stream: id, version: error.version, rule: .transition, evidence: error.reason)]
        }
        // A time-driven transition is recorded by the worker with its due time as `occurred_at`:
        // one recorded later than the slack allows left the activity in its state too long.
        var findings = events.filter { $0.event.cause == .system && $0.recordedAt > $0.event.occurredAt + slack }.map {
            Finding(
                stream: id,
                version: $0.event.version,
                rule: .deadline,
                evidence: "\($0.event.type.rawValue) was due at \($0.event.occurredAt) but recorded at \($0.recordedAt)"
            )
        }
        if let activity, let deadline = lifecycle.nextDeadline(of: activity), deadline.due + slack < now {
            findings.append(
                Finding(
                    stream: id,
                    version: activity.version,
                    rule: .deadline,
                    evidence: "the \(deadline.kind.rawValue) deadline was due at \(deadline.due); "
                        + "at \(now) the activity is still \(activity.state.rawValue)"
                )
            )
        }
        return findings
    }
}

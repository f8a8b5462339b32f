import ActivityLifecycle
import ArgumentParser
import CanonicalJSON
import EventLogTools
import EventStore

/// `liveline replay [--app A] [--verify] [--json]`: rebuilds the projection from the log.
struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Rebuild the projections (activities, deadlines, open counts) from the log and swap them in.",
        discussion: """
            The log is read in one snapshot and folded through the strict state machine into scratch \
            tables; then, while the server keeps serving, appends wait briefly at a gate while the \
            events appended meanwhile are folded in and the rows that differ are replaced. Nothing \
            is swapped when a stream cannot be folded. With --verify, nothing changes: every \
            difference from the live projection is reported. Exits 0 when the projection was (or \
            is) identical to the log, 1 when there were differences (repaired unless --verify) or \
            unfoldable streams, 2 on an error.
            """
    )

    @Option(help: "Rebuild only this app's activities.") var app: String?
    @Flag(help: "Compare with the live projection and report every difference, changing nothing.")
    var verify = false
    @Flag(help: "Print the outcome as JSON.") var json = false
    @OptionGroup var options: ConfigurationOptions

    func validate() throws {
        if let app, AppID(rawValue: app) == nil {
            throw ValidationError("--app must be \(IdentifierRules.requirement)")
        }
    }

    func run() async throws {
        let scope = app.flatMap(AppID.init(rawValue:)).map(ReplayScope.app) ?? .everything
        var consistent = true
        try await runningOnStore(options, exitCode: ExitCode(2)) { store in
            if case .app(let app) = scope, try await store.app(app) == nil {
                throw ConfigurationError("no app \(app)")
            }
            let progress = Progress(label: "events replayed")
            let report = try await ProjectionReplay(store: store, scope: scope).run(swap: !verify) {
                progress.report($0, of: $1)
            }
            progress.finish()
            let outcome = Outcome(report, verifying: verify)
            if json {
                print(try prettyJSON(outcome))
            } else {
                for difference in outcome.differences { print(difference) }
                print(outcome.summary)
            }
            consistent = report.isConsistent
        }
        if !consistent { throw ExitCode.failure }
    }
}

/// What `replay` prints.
private struct Outcome: Encodable {
    let events: Int
    let streams: Int
    let changedActivities: Int
    let openCountDifferences: Int
    let differences: [ProjectionDifference]
    let swapped: Bool
    let caughtUpEvents: Int
    let gateHeldMilliseconds: Int
    let unfoldableStreams: Int
    private let verifying: Bool

    init(_ report: ReplayReport, verifying: Bool) {
        events = report.events
        streams = report.streams
        changedActivities = report.changedActivities
        openCountDifferences = report.countMismatches.count
        differences = ProjectionDifference.all(in: report)
        swapped = report.swapped
        caughtUpEvents = report.caughtUpEvents
        gateHeldMilliseconds = Int(report.gateHeld / .milliseconds(1))
        unfoldableStreams = report.unfoldable.count
        self.verifying = verifying
    }

    enum CodingKeys: CodingKey {
        case events, streams, changedActivities, openCountDifferences, differences, swapped, caughtUpEvents,
            gateHeldMilliseconds
        case unfoldableStreams
    }

    var summary: String {
        let read = "\(counted(events, "event")) in \(counted(streams, "stream"))"
        let found =
            "\(counted(changedActivities, "activity", "activities")) and \(counted(openCountDifferences, "open count")) differ from the log"
        if unfoldableStreams > 0 {
            return "\(read): \(counted(unfoldableStreams, "stream")) cannot be folded (see liveline verify); "
                + (verifying ? found : "nothing was swapped")
        }
        if verifying { return "\(read): \(found)" }
        if changedActivities == 0 && openCountDifferences == 0 {
            return "\(read): the projection already matches the log; nothing was changed "
                + "(appends waited \(gateHeldMilliseconds) ms)"
        }
        return "\(read): \(found); swapped in, with \(counted(caughtUpEvents, "event")) appended meanwhile "
            + "(appends waited \(gateHeldMilliseconds) ms)"
    }
}

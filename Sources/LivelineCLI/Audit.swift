import ActivityLifecycle
import ArgumentParser
import CanonicalJSON
import Delivery
import EventLogTools
import EventStore

/// `liveline audit <app> <activity>`: the activity's timeline from the log.
struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Show an activity's timeline: each event, the state before and after, who caused it, its pushes, refusals."
    )

    @Argument(help: "The app id.") var app: String
    @Argument(help: "The activity id.") var activity: String
    @Flag(help: "Print JSON instead of a table.") var json = false
    @OptionGroup var options: ConfigurationOptions

    func validate() throws {
        guard AppID(rawValue: app) != nil, ActivityID(rawValue: activity) != nil else {
            throw ValidationError("ids must be \(IdentifierRules.requirement)")
        }
    }

    func run() async throws {
        let stream = StreamID(app: AppID(rawValue: app)!, activity: ActivityID(rawValue: activity)!)
        var corrupt = false
        try await runningOnStore(options) { store in
            let entries = AuditTimeline.build(
                events: try await store.events(of: stream),
                rejections: try await store.rejections(of: stream.app, activity: stream.activity, limit: 10_000),
                deliveries: try await store.deliveries(of: stream, limit: 10_000),
                lineage: try await store.tokenLineage(of: stream),
                lifecycle: store.lifecycle
            )
            guard !entries.isEmpty else {
                throw ConfigurationError(
                    "app \(stream.app) has no activity \(stream.activity), and no refused command names it"
                )
            }
            print(json ? try AuditReport.json(entries) : AuditReport.table(entries), terminator: "")
            corrupt = entries.contains { $0.problem != nil }
        }
        if corrupt { throw ExitCode.failure }
    }
}

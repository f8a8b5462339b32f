import ActivityLifecycle
import ArgumentParser
import EventLogTools
import EventStore

/// `liveline audit <app> <activity>`: the activity's timeline from the log.
struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show an activity's timeline: each event, the state before and after, who caused it, refusals."
    )

    @Argument(help: "The app id.") var app: String
    @Argument(help: "The activity id.") var activity: String
    @Flag(help: "Print JSON instead of a table.") var json = false
    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        var corrupt = false
        try await reportingFailures {
            guard let app = AppID(rawValue: app), let activity = ActivityID(rawValue: activity) else {
                throw ValidationError("ids must be \(IdentifierRules.requirement)")
            }
            let environment = try CommandEnvironment.make(options)
            let entries = try await environment.withStore { store in
                let stream = StreamID(app: app, activity: activity)
                return AuditTimeline.build(
                    events: try await store.events(of: stream),
                    rejections: try await store.rejections(of: app, activity: activity, limit: 10_000),
                    lifecycle: store.lifecycle
                )
            }
            guard !entries.isEmpty else {
                throw ConfigurationError("app \(app) has no activity \(activity), and no refused command names it")
            }
            print(json ? try AuditReport.json(entries) : AuditReport.table(entries), terminator: "")
            corrupt = entries.contains { $0.problem != nil }
        }
        if corrupt { throw ExitCode.failure }
    }
}

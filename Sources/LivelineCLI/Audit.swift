import ActivityLifecycle
import ArgumentParser
import CanonicalJSON
import Delivery
import EventLogTools
import EventStore
import Foundation
import LogArchive

/// `liveline audit <app> <activity>`: the activity's timeline from the log.
struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Show an activity's timeline: each event, the state before and after, who caused it, its pushes, refusals."
    )

    @Argument(help: "The app id.") var app: String
    @Argument(help: "The activity id.") var activity: String
    @Flag(help: "Print JSON instead of a table.") var json = false
    @Option(
        help: ArgumentHelp(
            "Where to look for the activity once its partition was retired (default: LIVELINE_ARCHIVE_DIR).",
            valueName: "folder"
        )
    )
    var archive: String?
    @OptionGroup var options: ConfigurationOptions

    func validate() throws {
        guard AppID(rawValue: app) != nil, ActivityID(rawValue: activity) != nil else {
            throw ValidationError("ids must be \(IdentifierRules.requirement)")
        }
    }

    func run() async throws {
        let stream = StreamID(app: AppID(rawValue: app)!, activity: ActivityID(rawValue: activity)!)
        var corrupt = false
        try await reportingFailures {
            let environment = try CommandEnvironment.make(options)
            let folder = (archive ?? environment.configuration.archiveDirectory).map(ArchiveFolder.init(path:))
            try await environment.withStore { store in
                var events = try await store.events(of: stream)
                var archived: ArchivedStream?
                if events.isEmpty, let folder {
                    archived = try await ArchiveSearch.find(stream, in: folder)
                    events = archived?.events ?? []
                }
                let entries = AuditTimeline.build(
                    events: events,
                    rejections: try await store.rejections(of: stream.app, activity: stream.activity, limit: 10_000),
                    deliveries: try await store.deliveries(of: stream, limit: 10_000),
                    lineage: try await store.tokenLineage(of: stream),
                    lifecycle: store.lifecycle
                )
                guard !entries.isEmpty else {
                    throw ConfigurationError(
                        "app \(stream.app) has no activity \(stream.activity), and no refused command names it"
                            + (folder.map { "; no archive in \($0.path) holds it" } ?? "")
                    )
                }
                if let archived, let folder {
                    // Beside the JSON, not in it, so that the JSON stays the timeline alone.
                    let note =
                        "retired: its events are in \(folder.path)/\(archived.manifest.partition)/"
                        + "\(archived.manifest.file.name) (streams begun \(archived.manifest.from) to \(archived.manifest.to))\n"
                    if json { FileHandle.standardError.write(Data(note.utf8)) } else { print(note, terminator: "") }
                }
                print(json ? try AuditReport.json(entries) : AuditReport.table(entries), terminator: "")
                corrupt = entries.contains { $0.problem != nil }
            }
        }
        if corrupt { throw ExitCode.failure }
    }
}

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
                let audit = try await store.audit(of: stream, archives: folder)
                guard !audit.entries.isEmpty else {
                    throw ConfigurationError(
                        "app \(stream.app) has no activity \(stream.activity), and no refused command names it"
                            + (folder.map { "; no archive in \($0.path) holds it" } ?? "")
                    )
                }
                if let archive = audit.archive, let folder {
                    // Beside the JSON, not in it, so that the JSON stays the timeline alone.
                    let note =
                        "retired: its events are in \(folder.path)/\(archive.partition)/\(archive.file.name) "
                        + "(streams begun \(archive.from) to \(archive.to))\n"
                    if json { FileHandle.standardError.write(Data(note.utf8)) } else { print(note, terminator: "") }
                }
                print(json ? try AuditReport.json(audit.entries) : AuditReport.table(audit.entries), terminator: "")
                corrupt = audit.entries.contains { $0.problem != nil }
            }
        }
        if corrupt { throw ExitCode.failure }
    }
}

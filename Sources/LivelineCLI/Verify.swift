import ActivityLifecycle
import ArgumentParser
import CanonicalJSON
import EventLogTools
import EventStore
import Foundation
import LogArchive

/// `liveline verify`: checks the whole log. Exit 0: nothing found; 1: findings; 2: an error.
struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Check the whole log: every stream folds strictly (versions, transitions, sizes, time), no deadline is overdue, no opening exceeded a cap; widget and control tokens agree with their changes.",
        discussion: """
            With --archive, the archives of retired partitions are checked too (each against its \
            manifest and the database's record, every archived stream folded), and the caps are \
            replayed over archives and live log together. To compare the live projection with the \
            log, use `liveline replay --verify`. Exits 0 when nothing is wrong, 1 with findings, 2 on \
            an error.
            """
    )

    @Flag(help: "Print the findings as JSON.") var json = false
    @Option(
        help: ArgumentHelp(
            "Also check the archives of the retired partitions in this folder (LIVELINE_ARCHIVE_DIR).",
            valueName: "folder"
        )
    )
    var archive: String?
    @Option(help: "How late a time-driven transition may be before it counts as missed (default 60s).")
    var slack = "60s"
    @OptionGroup var options: ConfigurationOptions

    func validate() throws {
        guard Duration(humanReadable: slack) != nil else {
            throw ValidationError("--slack must be a duration such as 60s or 5m")
        }
    }

    func run() async throws {
        let slack = Duration(humanReadable: slack)!
        var clean = true
        try await runningOnStore(options, exitCode: ExitCode(2)) { store in
            let progress = Progress(label: "events verified")
            let summary = try await LogVerifier(store: store, now: Timestamp.now(), slack: slack)
                .verify(archive: archive.map(ArchiveFolder.init(path:))) { progress.report($0) }
            progress.finish()
            if json {
                print(try prettyJSON(summary))
            } else {
                for finding in summary.findings { print(finding) }
                if let archive = summary.archive { print(archiveLines(archive)) }
                print(capsLine(summary.caps))
                for problem in summary.reloads.problems { print("reloads: \(problem)") }
                print(
                    "reloads: \(counted(summary.reloads.slots, "widget or control token")) as their changes have them, "
                        + "\(counted(summary.reloads.outcomes, "outcome")) of "
                        + "\(counted(summary.reloads.requests, "request")): "
                        + counted(summary.reloads.problems.count, "problem")
                )
                print(
                    "\(counted(summary.events, "event")) in \(counted(summary.streams, "stream"))"
                        + (summary.erasedStreams > 0 ? " (\(summary.erasedStreams) erased)" : "") + ": "
                        + counted(summary.findings.count, "finding")
                )
            }
            clean = summary.isClean
        }
        if !clean { throw ExitCode.failure }
    }

    private func archiveLines(_ archive: ArchiveOutcome) -> String {
        var lines = archive.problems.map { "archive: \($0)" }
        if !archive.retiredUnarchived.isEmpty {
            lines.append("retired without an archive: \(archive.retiredUnarchived.joined(separator: ", "))")
        }
        lines.append(
            "archives in \(archive.folder): \(counted(archive.archives, "archive")), "
                + "\(counted(archive.events, "event")) in \(counted(archive.streams, "stream"))"
                + (archive.erasedStreams > 0 ? " (\(archive.erasedStreams) erased)" : "") + ": "
                + counted(archive.problems.count, "problem")
        )
        return lines.joined(separator: "\n")
    }

    private func capsLine(_ caps: CapHistoryCheck.Outcome) -> String {
        if let reason = caps.notChecked { return "caps over history: not checked: \(reason)" }
        let unchecked =
            caps.uncheckedOpenings == 0
            ? "" : "; \(caps.uncheckedOpenings) committed before commit times were recorded, counted only"
        return "caps over history: \(counted(caps.checkedOpenings, "opening")) checked in commit order\(unchecked)"
    }
}

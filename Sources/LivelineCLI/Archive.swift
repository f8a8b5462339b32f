import ArgumentParser
import EventLogTools
import EventStore
import Foundation
import LogArchive

/// `liveline archive`: retires, now, the partitions whose retention has passed — what a server
/// with `LIVELINE_RETENTION` does each minute — for an operator who runs retention from a
/// scheduler of their own, or wants the archives written before a server starts.
struct Archive: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Archive, then drop, the log's partitions whose retention has passed.",
        discussion: """
            Does now what a server with LIVELINE_RETENTION does each minute: every partition kept \
            the retention after it settled is written to the folder (gzip-compressed CSV and \
            manifest.json, read back and checked), detached without blocking appends, and dropped \
            with the projection rows of its activities; then archives written before archives were \
            sealed are sealed, once each. A run interrupted anywhere is finished by the next. One process retires at a time. Exits 0 when done (also when nothing was due), \
            1 on an error.
            """
    )

    @Option(
        help: ArgumentHelp(
            "How long a partition is kept after it settled, such as 7d (default LIVELINE_RETENTION).",
            valueName: "duration"
        )
    )
    var retention: String?
    @Option(
        name: .customLong("to"),
        help: ArgumentHelp("The archive folder (default LIVELINE_ARCHIVE_DIR).", valueName: "folder")
    )
    var folder: String?
    @Flag(help: "Print the retired partitions as JSON.") var json = false
    @OptionGroup var options: ConfigurationOptions

    func run() async throws {
        try await reportingFailures {
            let settings = ["liveline.retention": retention, "liveline.archive.dir": folder].compactMapValues { $0 }
            let environment = try CommandEnvironment.make(options, settings: settings)
            guard environment.configuration.archiveDirectory != nil else {
                throw ConfigurationError("no archive folder: give --to or set LIVELINE_ARCHIVE_DIR")
            }
            guard let policy = environment.retentionPolicy else {
                throw ConfigurationError("no retention: give --retention or set LIVELINE_RETENTION")
            }
            try await environment.withStore { store in
                try await environment.check(policy, on: store)
                guard let retired = try await store.retirePartitions(policy) else {
                    throw ConfigurationError("another process is retiring partitions now; it finishes what is due")
                }
                var sealed: [ArchiveManifest] = []
                if let folder = policy.archive { sealed = try await store.sealOlderArchives(in: folder) ?? [] }
                if json {
                    print(try prettyJSON(retired))
                    return
                }
                for partition in retired { print(line(partition)) }
                print(
                    retired.isEmpty
                        ? "nothing to retire: no partition settled \(policy.retention.humanReadable) ago or more"
                        : "\(counted(retired.count, "partition")) archived and dropped"
                )
                if !sealed.isEmpty { print("\(counted(sealed.count, "archive")) written before sealing sealed") }
            }
        }
    }

    private func line(_ partition: RetiredPartition) -> String {
        var line = partition.partition
        if let archive = partition.archive {
            line += ": \(counted(archive.rows, "row")), \(archive.file.bytes) bytes, sha256 \(archive.file.sha256)"
        } else {
            line += ": archived by an earlier run"
        }
        if partition.table == "events" {
            line += "; \(counted(partition.activitiesRemoved, "activity", "activities")) removed"
        }
        return line
    }
}

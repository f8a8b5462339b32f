import ActivityLifecycle
import ArgumentParser
import EventLogTools
import EventStore
import Foundation

/// `liveline verify`: checks the whole log. Exit 0: nothing found; 1: findings; 2: an error.
struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Check the whole log: every stream folds strictly (versions, transitions, sizes, time) and no deadline is overdue.",
        discussion: """
            With --projections, also fold every stream as a replay would and compare the result with \
            the live projection, changing nothing. Exits 0 when nothing is wrong, 1 with findings, \
            2 on an error.
            """
    )

    @Flag(help: "Print the findings as JSON.") var json = false
    @Flag(help: "Also compare every activity's projection with the fold of its stream.") var projections = false
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
        var findings = 0
        try await runningOnStore(options, exitCode: ExitCode(2)) { store in
            let progress = Progress(label: "events verified")
            let summary = try await LogVerifier(store: store, now: Timestamp.now(), slack: slack)
                .verify(progress: progress.report)
            progress.finish()
            var differences: [ProjectionDifference] = []
            if projections {
                let compared = Progress(label: "events folded and compared with their projections")
                differences = try await ProjectionComparison(store: store).differences(progress: compared.report)
                compared.finish()
            }
            let report = Report(summary: summary, differences: differences)
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
                print(String(decoding: try encoder.encode(report), as: UTF8.self))
            } else {
                for finding in report.findings { print(finding) }
                for difference in differences { print(difference) }
                print(
                    "\(summary.events) events in \(summary.streams) streams: \(summary.findings.count) findings"
                        + (projections ? ", \(differences.count) projection differences" : "")
                )
            }
            findings = report.findings.count + differences.count
        }
        if findings > 0 { throw ExitCode.failure }
    }
}

/// What `verify` found, as printed with `--json`.
private struct Report: Encodable {
    let summary: LogVerifier.Summary
    let differences: [ProjectionDifference]

    var findings: [Finding] { summary.findings }

    enum CodingKeys: String, CodingKey { case events, streams, findings, projectionDifferences }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(summary.events, forKey: .events)
        try container.encode(summary.streams, forKey: .streams)
        try container.encode(summary.findings, forKey: .findings)
        try container.encode(differences, forKey: .projectionDifferences)
    }
}

/// A progress line on standard error when it is a terminal, rewritten in place; nothing otherwise.
final class Progress: Sendable {
    private let label: String
    private let isTerminal = isatty(STDERR_FILENO) == 1
    private let started = ContinuousClock.now

    init(label: String) {
        self.label = label
    }

    func report(_ count: Int) {
        guard isTerminal else { return }
        let elapsed = (ContinuousClock.now - started).components
        let seconds = max(Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18, 0.001)
        FileHandle.standardError.write(Data("\r\(count) \(label), \(Int(Double(count) / seconds))/s   ".utf8))
    }

    func finish() {
        if isTerminal { FileHandle.standardError.write(Data("\n".utf8)) }
    }
}

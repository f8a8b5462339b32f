import Foundation
import TestSupport
import Testing

/// What a finished `liveline` process printed, and how it ended.
struct Outcome {
    let status: Int32
    let output: String
    let errors: String
    var lines: [Substring] { output.split(separator: "\n") }
}

/// The `liveline` built beside this test bundle, run in a process of its own on a test database,
/// with the repository's migrations; its output and errors go to files in a folder of its own.
final class LivelineProcess: Sendable {
    private let process: Process
    private let folder: URL

    private init(process: Process, folder: URL) {
        self.process = process
        self.folder = folder
    }

    /// Starts `liveline arguments…` on `database` (none: `DATABASE_URL` unset); `environment`
    /// adds variables, or removes those given `nil`.
    static func start(
        _ arguments: [String],
        database: String?,
        environment: [String: String?] = [:]
    ) throws -> LivelineProcess {
        var variables = [
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "LIVELINE_MIGRATIONS": TestDatabase.migrationsDirectory.path(),
            "LIVELINE_LOG_LEVEL": "error",
        ]
        variables["DATABASE_URL"] = database
        for (name, value) in environment { variables[name] = value }
        let executable = URL(filePath: CommandLine.arguments[0]).deletingLastPathComponent().appending(path: "liveline")
        try #require(
            FileManager.default.isExecutableFile(atPath: executable.path()),
            "no liveline beside the tests at \(executable.path()): build with `swift build --build-tests`"
        )
        let folder = FileManager.default.temporaryDirectory.appending(path: "liveline-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data().write(to: folder.appending(path: "out"))
        try Data().write(to: folder.appending(path: "err"))
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = variables
        process.currentDirectoryURL = folder
        process.standardOutput = try FileHandle(forWritingTo: folder.appending(path: "out"))
        process.standardError = try FileHandle(forWritingTo: folder.appending(path: "err"))
        try process.run()
        return LivelineProcess(process: process, folder: folder)
    }

    /// What the process has written to standard output so far.
    var outputSoFar: String {
        (try? String(contentsOf: folder.appending(path: "out"), encoding: .utf8)) ?? ""
    }

    /// What the process has written to standard error so far.
    var errorsSoFar: String {
        (try? String(contentsOf: folder.appending(path: "err"), encoding: .utf8)) ?? ""
    }

    var isRunning: Bool { process.isRunning }

    /// Sends SIGKILL (kill -9): the process ends at once, with nothing recorded or given up.
    func killNow() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }

    /// Sends SIGTERM, as a service manager does to stop a service, unless the process has ended.
    func terminate() {
        if process.isRunning { process.terminate() }
    }

    /// Waits for the process to end and returns its outcome. One that has not ended within
    /// `limit` (a command that hangs) is killed, and that is a test failure.
    func finish(within limit: Duration = .seconds(60)) async throws -> Outcome {
        let deadline = ContinuousClock.now + limit
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                Issue.record("liveline \(process.arguments ?? []) did not end within \(limit); killed")
                kill(process.processIdentifier, SIGKILL)
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        // Foundation reaps the child and then says it is not running. It was once seen to miss
        // a killed child's exit (a zombie no one waited for, and a test run that hung in
        // `waitUntilExit`): give it a few seconds, then reap it here and fail rather than hang.
        let reapDeadline = ContinuousClock.now + .seconds(10)
        while process.isRunning && ContinuousClock.now < reapDeadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        if process.isRunning {
            var status: Int32 = 0
            let reaped = waitpid(process.processIdentifier, &status, WNOHANG)
            Issue.record("liveline \(process.arguments ?? []) ended, but Foundation never saw it (waitpid: \(reaped))")
            return Outcome(status: -1, output: outputSoFar, errors: "")
        }
        return try await TestDatabase.offCooperativePool { [process, folder] in
            process.waitUntilExit()
            defer { try? FileManager.default.removeItem(at: folder) }
            return Outcome(
                status: process.terminationStatus,
                output: try String(contentsOf: folder.appending(path: "out"), encoding: .utf8),
                errors: try String(contentsOf: folder.appending(path: "err"), encoding: .utf8)
            )
        }
    }
}

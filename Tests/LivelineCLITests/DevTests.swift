import Foundation
import HTTPTypes
import HummingbirdTesting
import NIOCore
import TestSupport
import Testing

@Suite("liveline dev: the embedded default of the quick start")
struct DevTests {
    @Test(
        "without DATABASE_URL it starts a private cluster, prints a curl that works, stops the cluster on SIGTERM, and finds its data again on the next start"
    )
    func embeddedDefault() async throws {
        let curl = try #require(
            ["/usr/bin/curl", "/bin/curl"].first { FileManager.default.isExecutableFile(atPath: $0) },
            "the quick start's curl is needed"
        )
        let folder = FileManager.default.temporaryDirectory.appending(path: "liveline-dev-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let environment: [String: String?] = ["LIVELINE_DEV_DATA": folder.path()]

        // First start: a new cluster; the printed curl creates an activity. (A port another
        // suite's server took first is chosen again: `dev` stops its cluster and ends.)
        let (first, port) = try await Loopback.startServer(["dev"], database: nil, environment: environment)
        defer { first.terminate() }  // should the test stop early
        let printed = first.outputSoFar
        let command = try #require(Self.curlCommand(in: printed), "no curl command in:\n\(printed)")
        let created = try await Self.shell("\(command) -w ' %{http_code}'", curl: curl)
        #expect(created.hasSuffix(" 201"), "\(created)")
        let activityID = try #require(Self.field("activityId", in: created))
        // The other curls, in order: the token, the update, the widget token and the reload reach
        // the local APNs, which prints them.
        for command in Self.curlCommands(in: printed).dropFirst() {
            let answered = try await Self.shell("\(command) -w ' %{http_code}'", curl: curl)
            #expect(answered.hasSuffix(" 200") || answered.hasSuffix(" 202"), "\(command): \(answered)")
        }
        for _ in 0..<100
        where !(first.outputSoFar.contains("(widgets): priority 5") && first.outputSoFar.contains("on the way")) {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(first.outputSoFar.contains(#"(widgets): priority 5 {"aps":{"content-changed":true}}"#))
        #expect(first.outputSoFar.contains(#""stage":"on the way""#))
        // The console it prints takes the demo app's key.
        #expect(printed.contains("console:       http://127.0.0.1:\(port)/console"))
        let demoKey = try #require(Self.demoKey(in: printed))
        let cookie = try #require(try await ServedApps.signInToConsole(port: port, key: demoKey))
        let timeline = try await ServedApps.consolePage(
            port: port,
            "/console/apps/demo/activities/\(activityID)",
            cookie: cookie
        )
        #expect(timeline.contains("activity.updated"), "\(timeline)")
        first.terminate()
        let firstOutcome = try await first.finish()
        #expect(firstOutcome.status == 0, "\(firstOutcome.errors)")
        #expect(!FileManager.default.fileExists(atPath: folder.appending(path: "postgres/postmaster.pid").path()))

        // Second start on the same folder: the same database, a new key for the same demo app.
        let (second, secondPort) = try await Loopback.startServer(["dev"], database: nil, environment: environment)
        defer { second.terminate() }
        let key = try #require(Self.demoKey(in: second.outputSoFar))
        #expect(key != Self.demoKey(in: printed))
        let status = try await TestClient.withClient(host: "127.0.0.1", port: secondPort) { client in
            try await client.get("/v1/activities/\(activityID)", headers: [.authorization: "Bearer \(key)"]).status
        }
        #expect(status == .ok)
        second.terminate()
        #expect(try await second.finish().status == 0)
    }

    @Test("on a port already taken it says so in one line, exits 1, and leaves no cluster running")
    func portTaken() async throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "liveline-dev-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (taken, port) = try await Loopback.takenPort()
        let dev = try LivelineProcess.start(
            ["dev"],
            database: nil,
            environment: ["LIVELINE_DEV_DATA": folder.path(), "LIVELINE_PORT": "\(port)"]
        )
        let outcome = try await dev.finish(within: .seconds(120))
        try await taken.close()
        #expect(outcome.status == 1)
        #expect(
            outcome.errors.contains("cannot listen on 127.0.0.1:\(port): Address already in use"),
            "\(outcome.errors)"
        )
        // The cluster it started was stopped as it ended.
        #expect(FileManager.default.fileExists(atPath: folder.appending(path: "postgres/PG_VERSION").path()))
        #expect(!FileManager.default.fileExists(atPath: folder.appending(path: "postgres/postmaster.pid").path()))
    }

    /// The first curl command `dev` prints.
    private static func curlCommand(in output: String) -> String? {
        curlCommands(in: output).first
    }

    /// The curl commands `dev` prints, in order, each joined from its continued lines.
    private static func curlCommands(in output: String) -> [String] {
        var commands: [String] = []
        var command: String?
        for line in output.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if command == nil, trimmed.hasPrefix("curl -s ") { command = "" }
            guard let started = command else { continue }
            if trimmed.hasSuffix("\\") {
                command = started + trimmed.dropLast() + " "
            } else {
                commands.append(started + trimmed)
                command = nil
            }
        }
        return commands
    }

    /// The demo app's key, from the line `app "demo":    key <secret>  (…)`.
    private static func demoKey(in output: String) -> String? {
        guard let line = output.split(separator: "\n").first(where: { $0.contains("app \"demo\":") }),
            let key = line.split(separator: " ").drop(while: { $0 != "key" }).dropFirst().first
        else { return nil }
        return String(key)
    }

    /// The string value of `"name":"…"` in a JSON text.
    private static func field(_ name: String, in json: String) -> String? {
        guard let start = json.range(of: "\"\(name)\":\"") else { return nil }
        return json[start.upperBound...].split(separator: "\"").first.map(String.init)
    }

    /// Runs `command` with /bin/sh, as a person pastes it; returns what it printed.
    private static func shell(_ command: String, curl: String) async throws -> String {
        try await TestDatabase.offCooperativePool {
            let process = Process()
            let output = Pipe()
            process.executableURL = URL(filePath: "/bin/sh")
            process.arguments = ["-c", command]
            process.environment = ["PATH": URL(filePath: curl).deletingLastPathComponent().path()]
            process.standardOutput = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
    }
}

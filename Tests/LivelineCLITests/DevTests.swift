import Foundation
import HTTPTypes
import HummingbirdTesting
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
        let port = try await Loopback.freePort()
        let environment: [String: String?] = ["LIVELINE_DEV_DATA": folder.path(), "LIVELINE_PORT": "\(port)"]

        // First start: a new cluster; the printed curl creates an activity.
        let first = try LivelineProcess.start(["dev"], database: nil, environment: environment)
        defer { first.terminate() }  // should the test stop early
        try await Loopback.waitUntilReady(first, port: port)
        let printed = first.outputSoFar
        let command = try #require(Self.curlCommand(in: printed), "no curl command in:\n\(printed)")
        let created = try await Self.shell("\(command) -w ' %{http_code}'", curl: curl)
        #expect(created.hasSuffix(" 201"), "\(created)")
        let activityID = try #require(Self.field("activityId", in: created))
        first.terminate()
        let firstOutcome = try await first.finish()
        #expect(firstOutcome.status == 0, "\(firstOutcome.errors)")
        #expect(!FileManager.default.fileExists(atPath: folder.appending(path: "postgres/postmaster.pid").path()))

        // Second start on the same folder: the same database, a new key for the same demo app.
        let second = try LivelineProcess.start(["dev"], database: nil, environment: environment)
        defer { second.terminate() }
        try await Loopback.waitUntilReady(second, port: port)
        let key = try #require(Self.demoKey(in: second.outputSoFar))
        #expect(key != Self.demoKey(in: printed))
        let status = try await TestClient.withClient(host: "127.0.0.1", port: port) { client in
            try await client.get("/v1/activities/\(activityID)", headers: [.authorization: "Bearer \(key)"]).status
        }
        #expect(status == .ok)
        second.terminate()
        #expect(try await second.finish().status == 0)
    }

    /// The curl command `dev` prints, joined from its continued lines.
    private static func curlCommand(in output: String) -> String? {
        guard let start = output.range(of: "curl -s ") else { return nil }
        var command = ""
        for line in output[start.lowerBound...].split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasSuffix("\\") else { return command + trimmed }
            command += trimmed.dropLast() + " "
        }
        return nil
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

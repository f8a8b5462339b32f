import ActivityLifecycle
import CanonicalJSON
import Crypto
import EventStore
import Foundation
import LocalAPNs
import Postgres
import TestSupport
import Testing

/// The `liveline` executable, run as a separate process, as an operator runs it: its arguments,
/// its environment, what it prints, and its exit status.
@Suite("The liveline command, run as an operator runs it")
struct CommandLineTests {
    let database: String

    init() async throws {
        database = try await TestDatabase.makeEmpty()
    }

    @Test("migrate makes a new database from the baseline; a second run has nothing to do")
    func migrate() async throws {
        let first = try await liveline("migrate")
        #expect(first.status == 0)
        #expect(first.output.hasPrefix("applied baseline/"), "\(first.output)")
        let second = try await liveline("migrate")
        #expect(second.status == 0)
        #expect(second.output == "database is up to date\n")
    }

    @Test("migrate writes the configured partition interval before it creates the partitions, as serve does")
    func migrateTakesTheConfiguredInterval() async throws {
        let migrated = try await liveline("migrate", environment: ["LIVELINE_PARTITION_INTERVAL": "1m"])
        #expect(migrated.status == 0, "\(migrated.errors)")
        let lengths = try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                try connection.query(
                    """
                    SELECT DISTINCT parent || ' ' || (to_time - from_time)::text AS length FROM log_partitions
                    WHERE to_time > now() ORDER BY 1
                    """
                ).map { try $0.decode("length", as: String.self) }
            }
        }
        #expect(
            lengths == [
                "deliveries 00:01:00", "event_traces 00:01:00", "events 00:01:00", "push_token_invalidations 00:01:00",
                "rejections 00:01:00", "reload_deliveries 00:01:00",
            ]
        )
    }

    @Test("apps: create with caps, change, list, issue and revoke keys, the global cap, and the audit trail")
    func apps() async throws {
        try await liveline("migrate")
        let created = try await liveline("apps", "create", "demo", "--max-open", "3")
        #expect(created.status == 0)
        #expect(
            created.lines.first
                == Substring(
                    "demo  bundle demo  open 0/3  per device -  budget 10/h  push-to-start 10/h/device"
                        + "  reloads widgets 1800s controls 0s"
                )
        )
        let firstKey = try #require(created.lines.dropFirst().first.flatMap(Self.keyID))

        let again = try await liveline("apps", "create", "demo")
        #expect(again.status == 1)
        #expect(again.errors == "liveline: error: an app demo already exists\n")

        let changed = try await liveline(
            "apps",
            "set",
            "demo",
            "--max-open",
            "5",
            "--max-open-per-device",
            "2",
            "--push-to-start-budget",
            "4"
        )
        let line =
            "demo  bundle demo  open 0/5  per device 2  budget 10/h  push-to-start 4/h/device"
            + "  reloads widgets 1800s controls 0s"
        #expect(changed.output == line + "\n")
        #expect(try await liveline("apps", "list").lines == [Substring(line)])

        let issued = try await liveline("apps", "issue-key", "demo")
        let secondKey = try #require(issued.lines.first.flatMap(Self.keyID))
        #expect(secondKey != firstKey)
        let revoked = try await liveline("apps", "revoke-key", "demo", firstKey)
        #expect(revoked.output == "revoked; servers stop accepting it within 5 seconds\n")
        // Revoking twice is fine; a key the app does not have is an error.
        #expect(try await liveline("apps", "revoke-key", "demo", firstKey).status == 0)
        let otherApps = try await liveline("apps", "revoke-key", "other", secondKey)
        #expect(otherApps.status == 1)
        #expect(otherApps.errors == "liveline: error: app other has no key \(secondKey)\n")

        #expect(try await liveline("apps", "global-cap", "100").output == "global cap on open activities: 100\n")

        let history = try await liveline("apps", "history", "demo", "--json")
        let changes = try JSONSerialization.jsonObject(with: Data(history.output.utf8)) as? [[String: Any]]
        #expect(
            changes?.compactMap { $0["action"] as? String }
                == ["limits.updated", "key.revoked", "key.issued", "app.updated", "key.issued", "app.created"]
        )
        #expect(changes?.allSatisfy { $0["actor"] as? String == "command_line" } == true)
        let updated = changes?.first { $0["action"] as? String == "app.updated" }?["details"] as? [String: Any]
        #expect((updated?["pushToStartBudgetPerHour"] as? [String: Any])?["to"] as? Int == 4)
    }

    @Test("verify, replay and audit on a log: 0 when all is well, 1 when the projection drifted, 2 on an error")
    func tools() async throws {
        try await liveline("migrate")
        try await liveline("apps", "create", "demo", "--max-open", "10")
        try await TestDatabase.withPool(database) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            for index in 0..<3 {
                let stream = StreamID(app: AppID(rawValue: "demo")!, activity: ActivityID(rawValue: "a\(index)")!)
                let content = ActivityContent(contentState: JSONObject(["step": .number(JSONNumber(index))]))
                try await store.execute(
                    .request(.init(activityType: "delivery", content: content)),
                    on: stream,
                    at: .now()
                )
            }
            try await store.execute(
                .end(.init(dismissal: .immediate)),
                on: StreamID(app: AppID(rawValue: "demo")!, activity: ActivityID(rawValue: "a2")!),
                at: .now()
            )
        }

        let verified = try await liveline("verify")
        #expect(verified.status == 0)
        #expect(verified.lines.last == "5 events in 3 streams: 0 findings")
        let matching = try await liveline("replay", "--verify")
        #expect(matching.status == 0)
        #expect(matching.output == "5 events in 3 streams: 0 activities and 0 open counts differ from the log\n")

        try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection {
                try $0.execute("UPDATE activities SET push_token = 'tampered' WHERE activity_id = 'a0'")
            }
        }
        let drifted = try await liveline("replay", "--verify")
        #expect(drifted.status == 1)
        #expect(drifted.lines.last == "5 events in 3 streams: 1 activity and 0 open counts differ from the log")
        let repaired = try await liveline("replay")
        #expect(repaired.status == 1)
        #expect(try await liveline("replay", "--verify").status == 0)

        let audit = try await liveline("audit", "demo", "a2", "--json")
        #expect(audit.status == 0)
        let entries = try JSONSerialization.jsonObject(with: Data(audit.output.utf8)) as? [[String: Any]]
        #expect(entries?.count == 3)

        let slack = try await liveline("verify", "--slack", "soon")
        #expect(slack.status == 64)
        let unreachable = try await liveline("verify", environment: ["DATABASE_URL": "host=/nonexistent dbname=x"])
        #expect(unreachable.status == 2)
        #expect(unreachable.errors.hasPrefix("liveline: error: "))
    }

    @Test(
        "erase: a device's dismissed activities erased and said so; refusals are one line and exit 1; a bad call is 64"
    )
    func erase() async throws {
        try await liveline("migrate")
        try await liveline("apps", "create", "demo")
        let (done, ongoing) = (
            StreamID(app: AppID(rawValue: "demo")!, activity: ActivityID(rawValue: "done")!),
            StreamID(app: AppID(rawValue: "demo")!, activity: ActivityID(rawValue: "ongoing")!)
        )
        try await TestDatabase.withPool(database) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            let request = Command.request(
                .init(
                    activityType: "delivery",
                    content: ActivityContent(contentState: JSONObject(["to": .string("Ada Lovelace")])),
                    deviceID: DeviceID(rawValue: "phone-1")
                )
            )
            try await store.execute(request, on: done, at: .now())
            try await store.execute(.end(.init(dismissal: .immediate)), on: done, at: .now())
            try await store.execute(request, on: ongoing, at: .now())
        }
        let refused = try await liveline("erase", "demo", "--device", "phone-1")
        #expect(refused.status == 1)
        #expect(
            refused.errors
                == "liveline: error: only dismissed activities are erased; end these with dismissal immediate first: ongoing\n"
        )
        let erased = try await liveline("erase", "demo", "--activity", "done", "--json")
        #expect(erased.status == 0)
        let report = try JSONSerialization.jsonObject(with: Data(erased.output.utf8)) as? [String: Any]
        #expect(report?["scope"] as? String == "activity" && report?["erased"] as? Int == 1)
        #expect(report?["finishedAt"] != nil)
        let line = try await liveline("erase", "demo", "--activity", "done")
        #expect(line.output.hasPrefix("erasure 2 of app demo: 1 of 1 activity erased"))
        #expect(
            try await liveline("erase", "demo", "--device", "nobody").errors.contains(
                "knows nothing of the device nobody"
            )
        )
        #expect(try await liveline("erase", "demo").status == 64)
        #expect(try await liveline("erase", "demo", "--activity", "a", "--device", "b").status == 64)
        let verified = try await liveline("verify")
        #expect(verified.status == 0 && verified.lines.last == "4 events in 2 streams (1 erased): 0 findings")
    }

    @Test("archive retires what is due into a folder; audit finds the activity there; verify --archive checks it")
    func archives() async throws {
        try await liveline("migrate")
        try await liveline("apps", "create", "demo", "--max-open", "10")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)").path
        let stream = StreamID(app: AppID(rawValue: "demo")!, activity: ActivityID(rawValue: "a0")!)
        try await TestDatabase.withPool(database) { pool in
            let store = EventStore(pool: pool, lifecycle: Lifecycle())
            try await store.createPartitions()
            try await store.execute(
                .request(.init(activityType: "delivery", content: ActivityContent(contentState: .empty))),
                on: stream,
                at: .now()
            )
            try await store.execute(.end(.init(dismissal: .immediate)), on: stream, at: .now())
        }

        let unarchived = try await liveline("archive", "--retention", "7d", environment: ["LIVELINE_ARCHIVE_DIR": nil])
        #expect(unarchived.status == 1)
        #expect(unarchived.errors == "liveline: error: no archive folder: give --to or set LIVELINE_ARCHIVE_DIR\n")
        let unset = try await liveline("archive", "--to", folder, environment: ["LIVELINE_RETENTION": nil])
        #expect(unset.errors == "liveline: error: no retention: give --retention or set LIVELINE_RETENTION\n")
        let short = try await liveline("archive", "--to", folder, "--retention", "1h")
        #expect(short.status == 1)
        #expect(short.errors.contains("LIVELINE_RETENTION must be at least"))
        let early = try await liveline("archive", "--to", folder, "--retention", "7d")
        #expect(early.status == 0, "\(early.errors)")
        #expect(early.lines == ["nothing to retire: no partition settled 7d ago or more"])

        // As if the partitions up to now had settled eight days ago.
        try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                try connection.execute(
                    "UPDATE log_partitions SET settled_at = now() - interval '8 days' WHERE from_time <= now()"
                )
            }
        }
        let retired = try await liveline("archive", "--to", folder, "--retention", "7d")
        #expect(retired.status == 0, "\(retired.errors)")
        #expect(retired.lines.contains { $0.hasPrefix("events_before_partitions: 0 rows, ") })
        #expect(
            retired.lines.contains {
                $0.hasPrefix("events_") && $0.contains(": 3 rows, ") && $0.hasSuffix("; 1 activity removed")
            }
        )
        #expect(retired.lines.last?.hasSuffix(" partitions archived and dropped") == true)
        let again = try await liveline("archive", "--to", folder, "--retention", "7d", "--json")
        #expect(again.status == 0)
        #expect((try JSONSerialization.jsonObject(with: Data(again.output.utf8)) as? [Any])?.isEmpty == true)

        let audit = try await liveline("audit", "demo", "a0", environment: ["LIVELINE_ARCHIVE_DIR": folder])
        #expect(audit.status == 0, "\(audit.errors)")
        #expect(audit.lines.first?.hasPrefix("retired: its events are in \(folder)/events_") == true)
        #expect(audit.output.contains("activity.requested") && audit.output.contains("activity.dismissed"))
        let json = try await liveline("audit", "demo", "a0", "--json", "--archive", folder)
        #expect(json.status == 0)
        #expect((try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]])?.count == 3)
        #expect(json.errors.hasPrefix("retired: "))
        let ghost = try await liveline("audit", "demo", "ghost", "--archive", folder)
        #expect(ghost.status == 1)
        #expect(ghost.errors.hasSuffix("; no archive in \(folder) holds it\n"))

        let verified = try await liveline("verify", "--archive", folder)
        #expect(verified.status == 0, "\(verified.output)")
        #expect(
            verified.lines.contains {
                $0.hasPrefix("archives in \(folder): ") && $0.hasSuffix("3 events in 1 stream: 0 problems")
            }
        )
        #expect(verified.lines.last == "0 events in 0 streams: 0 findings")
        let partition = try #require(audit.lines.first?.split(separator: "/").dropLast().last.map(String.init))
        try FileManager.default.removeItem(atPath: "\(folder)/\(partition)")
        let broken = try await liveline("verify", "--archive", folder)
        #expect(broken.status == 1)
        #expect(
            broken.output.contains("archive: partition \(partition) was archived, but its archive is not in \(folder)")
        )
    }

    @Test("an error an operator can act on is one line on standard error, with a non-zero status")
    func errors() async throws {
        let unset = try await liveline("apps", "list", environment: ["DATABASE_URL": nil])
        #expect(unset.status == 1)
        #expect(unset.errors.hasPrefix("liveline: error: DATABASE_URL is not set"))

        let unmigrated = try await liveline("apps", "list")
        #expect(unmigrated.status == 1)
        #expect(
            unmigrated.errors.hasPrefix("liveline: error: the database is not migrated (pending: baseline/"),
            "\(unmigrated.errors)"
        )
        #expect(unmigrated.errors.hasSuffix("run `liveline migrate`\n"))
        // A server checks first, in its start-up, and serves nothing.
        let unmigratedServer = try await liveline(
            "serve",
            environment: ["LIVELINE_PORT": "\(try await Loopback.freePort())"]
        )
        #expect(unmigratedServer.status == 1)
        #expect(unmigratedServer.errors == unmigrated.errors)

        let badSetting = try await liveline("migrate", environment: ["LIVELINE_POOL_SIZE": "none"])
        #expect(badSetting.status == 1)
        #expect(
            badSetting.errors
                == "liveline: error: LIVELINE_POOL_SIZE must be a whole number from 1 to 1000, got \"none\"\n"
        )

        try await liveline("migrate")
        let unknownApp = try await liveline("apps", "issue-key", "ghost")
        #expect(unknownApp.status == 1)
        #expect(unknownApp.errors == "liveline: error: no app ghost\n")
        let unknownActivity = try await liveline("audit", "ghost", "a1")
        #expect(unknownActivity.status == 1)
        #expect(
            unknownActivity.errors
                == "liveline: error: app ghost has no activity a1, and no refused command names it\n"
        )
        for outcome in [unset, unmigrated, unmigratedServer, badSetting, unknownApp, unknownActivity] {
            #expect(outcome.errors.split(separator: "\n").count == 1)
        }

        // Arguments are checked before anything connects: the usage error status.
        let badID = try await liveline("apps", "create", "bad id")
        #expect(badID.status == 64)
        #expect(badID.errors.contains("the app id must be"))
        let negativeCap = try await liveline("apps", "global-cap", "--", "-1")
        #expect(negativeCap.status == 64)
    }

    /// The key id of a `key <id>: <secret>` line.
    private static func keyID(_ line: Substring) -> String? {
        guard line.hasPrefix("key "), let colon = line.firstIndex(of: ":") else { return nil }
        return String(line[line.index(line.startIndex, offsetBy: 4)..<colon])
    }

    @Test("apps channels: create at APNs with the app's credentials, list, delete; each audited")
    func channels() async throws {
        try await liveline("migrate")
        try await liveline("apps", "create", "demo")
        let server = try await LocalAPNs.start()
        do {
            let key = P256.Signing.PrivateKey()
            server.register(teamID: "TEAM123456", keyID: "KEY1234567", publicKey: key.publicKey, bundleID: "demo")
            let directory = FileManager.default.temporaryDirectory.appending(path: "channels-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let (keyFile, certificate) = (
                directory.appending(path: "AuthKey.p8"), directory.appending(path: "apns.pem")
            )
            try Data(key.pemRepresentation.utf8).write(to: keyFile)
            try Data(server.certificatePEM.utf8).write(to: certificate)
            let environment = [
                "LIVELINE_SECRET_KEY": SecretKey.random(), "LIVELINE_APNS_CHANNELS_SANDBOX_URL": server.baseURL,
                "LIVELINE_APNS_CA_FILE": certificate.path,
            ]
            let noCredentials = try await liveline(
                ["apps", "channels", "create", "demo", "--storage-policy", "none"],
                environment: environment
            )
            #expect(noCredentials.status == 1)
            #expect(noCredentials.errors.hasPrefix("liveline: error: App demo has no APNs credentials"))
            let set = try await liveline(
                ["apps", "apns", "set", "demo", "--team-id", "TEAM123456", "--key-id", "KEY1234567"]
                    + ["--environment", "sandbox", "--key-file", keyFile.path],
                environment: environment
            )
            #expect(set.status == 0, "\(set.errors)")

            let created = try await liveline(
                ["apps", "channels", "create", "demo", "--storage-policy", "most-recent"],
                environment: environment
            )
            #expect(created.status == 0, "\(created.errors)")
            let id = try #require(created.lines.first?.split(separator: " ").first.map(String.init))
            #expect(server.channels(of: "demo") == [id])
            #expect(created.output.contains("  sandbox  storage most-recent  created "))
            let listed = try await liveline(["apps", "channels", "list", "demo"], environment: environment)
            #expect(listed.lines.first == "1 channel(s) of demo in sandbox")
            #expect(listed.lines.dropFirst().first == created.lines.first)
            let deleted = try await liveline(["apps", "channels", "delete", "demo", id], environment: environment)
            #expect(deleted.output == "deleted channel \(id) of demo\n")
            #expect(server.channels(of: "demo").isEmpty)
            let again = try await liveline(["apps", "channels", "delete", "demo", id], environment: environment)
            #expect(again.status == 1)
            #expect(again.errors == "liveline: error: The app has no channel \(id) (or it was deleted).\n")

            let badPolicy = try await liveline(["apps", "channels", "create", "demo", "--storage-policy", "forever"])
            #expect(badPolicy.status == 64)
            #expect(badPolicy.errors.contains("--storage-policy must be none or most-recent"))
            let history = try await liveline("apps", "history", "demo")
            #expect(history.lines.contains { $0.contains("channel.created") })
            #expect(history.lines.contains { $0.contains("channel.deleted") })
        } catch {
            try? await server.shutdown()
            throw error
        }
        try await server.shutdown()
    }

    @Test("apps apns: set from a .p8 file under LIVELINE_SECRET_KEY, show, remove; the key is never printed")
    func apnsCredentials() async throws {
        try await liveline("migrate")
        try await liveline("apps", "create", "demo")
        let key = P256.Signing.PrivateKey()
        let file = FileManager.default.temporaryDirectory.appending(path: "AuthKey_\(UUID().uuidString).p8")
        try Data(key.pemRepresentation.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let flags = [
            "--team-id", "TEAM123456", "--key-id", "KEY1234567", "--environment", "sandbox", "--key-file", file.path,
        ]
        let secret = ["LIVELINE_SECRET_KEY": SecretKey.random()]

        let unsealed = try await liveline(["apps", "apns", "set", "demo"] + flags)
        #expect(unsealed.status == 1)
        #expect(unsealed.errors.hasPrefix("liveline: error: LIVELINE_SECRET_KEY is not set"))

        let set = try await liveline(["apps", "apns", "set", "demo"] + flags, environment: secret)
        #expect(set.status == 0, "\(set.errors)")
        #expect(set.output.hasPrefix("demo  team TEAM123456  key KEY1234567  sandbox  public key SHA-256 "))
        let shown = try await liveline("apps", "apns", "show", "demo")
        #expect(shown.output == set.output)
        let pemBody = String(key.pemRepresentation.split(separator: "\n")[1])
        for outcome in [set, shown] { #expect(!(outcome.output + outcome.errors).contains(pemBody)) }

        let notAKey = file.deletingLastPathComponent().appending(path: "not-a-key-\(UUID().uuidString).p8")
        try Data("not a key".utf8).write(to: notAKey)
        defer { try? FileManager.default.removeItem(at: notAKey) }
        let badKey = try await liveline(
            ["apps", "apns", "set", "demo"] + flags.dropLast() + [notAKey.path],
            environment: secret
        )
        #expect(badKey.status == 1)
        #expect(
            badKey.errors
                == "liveline: error: \(notAKey.path) must be a PEM-encoded P-256 private key, as in the .p8 file Apple issues\n"
        )
        let missing = try await liveline(
            ["apps", "apns", "set", "demo"] + flags.dropLast() + ["/nonexistent.p8"],
            environment: secret
        )
        #expect(missing.errors == "liveline: error: cannot read the key file /nonexistent.p8\n")
        let badSecret = try await liveline(
            ["apps", "apns", "set", "demo"] + flags,
            environment: ["LIVELINE_SECRET_KEY": "short"]
        )
        #expect(badSecret.status == 1)
        #expect(badSecret.errors.hasPrefix("liveline: error: LIVELINE_SECRET_KEY must be 32 random bytes"))

        #expect(try await liveline("apps", "apns", "remove", "demo").output == "removed the APNs credentials of demo\n")
        #expect(try await liveline("apps", "apns", "remove", "demo").output == "app demo had no APNs credentials\n")
        let none = try await liveline("apps", "apns", "show", "demo")
        #expect(none.status == 1)
        #expect(none.errors == "liveline: error: app demo has no APNs credentials\n")
        let history = try await liveline("apps", "history", "demo")
        #expect(history.lines.contains { $0.contains("apns.set") })
        #expect(history.lines.contains { $0.contains("apns.removed") })
    }

    /// Runs `liveline` on the suite's database to its end (see `LivelineProcess`).
    @discardableResult
    private func liveline(_ arguments: String..., environment: [String: String?] = [:]) async throws -> Outcome {
        try await liveline(arguments, environment: environment)
    }

    @discardableResult
    private func liveline(_ arguments: [String], environment: [String: String?] = [:]) async throws -> Outcome {
        try await LivelineProcess.start(arguments, database: database, environment: environment).finish()
    }
}

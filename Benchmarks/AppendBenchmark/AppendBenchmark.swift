import ActivityLifecycle
import BenchmarkSupport
import CanonicalJSON
import EmbeddedPostgres
import EventStore
import Foundation
import Logging
import Postgres

/// Measures the event store's append path against pgbench running the same SQL, on a private
/// PostgreSQL cluster with default durability (fsync and synchronous commit on):
///
/// 1. updates through `EventStore.execute` (load, decide, `liveline_append`), `clients` at once;
/// 2. pgbench running the same two statements (the load query and `liveline_append`);
/// 3. opening new activities through `EventStore.execute` with every cap enforced (app, device,
///    global), compared with (1).
///
/// 4. opening activities under cap pressure: an app whose devices may hold 4 open activities, and
///    every opening of the same 2 ms on one device, so that batches often hold more openings of a
///    device than fit (those are decided one by one) — commands decided a second, and the share
///    refused.
///
/// They take turns, round after round, with pgbench running the SQL of an opening last, to show
/// the ratio the SQL alone sets for (3); the ratios are those of the sums over the rounds.
@main
struct AppendBenchmark {
    static let app = AppID(rawValue: "bench")!
    static let cappedApp = AppID(rawValue: "capped")!
    static let activities = 1_000

    static func main() async throws {
        let arguments = CommandLine.arguments
        let clients = Int(value(of: "--clients", in: arguments) ?? "8") ?? 8
        let seconds = Int(value(of: "--seconds", in: arguments) ?? "10") ?? 10
        let rounds = max(1, Int(value(of: "--rounds", in: arguments) ?? "2") ?? 2)
        let migrations = URL(filePath: value(of: "--migrations", in: arguments) ?? "../migrations")
        // The store's default unless given: a quarter of the pool (of `clients` connections).
        let writers = value(of: "--writers", in: arguments).flatMap { Int($0) }
        let batches = WriteBatches.bootstrap()
        var logger = Logger(label: "bench")
        logger.logLevel = .warning

        let database = try await BenchmarkDatabase.start(logger: logger)
        defer { database.stop() }
        let cluster = database.cluster
        let url = database.url

        let pool = try ConnectionPool(
            configuration: .init(connectionString: url, maximumConnections: clients),
            logger: logger
        )
        let store = EventStore(pool: pool, lifecycle: Lifecycle(), writers: writers)
        try await Migrator.loading(from: migrations, pool: pool).migrate(logger: logger)
        try await store.createApp(
            app,
            AppSettings(bundleID: "bench", maxOpen: 10_000_000, maxOpenPerDevice: 1_000_000),
            by: .commandLine
        )
        try await store.createApp(
            cappedApp,
            AppSettings(bundleID: "capped", maxOpen: 10_000_000, maxOpenPerDevice: 4),
            by: .commandLine
        )
        try await store.setGlobalMaxOpen(100_000_000, by: .commandLine)
        let start = Timestamp(microsecondsSince1970: Int64(Date().timeIntervalSince1970 * 1_000_000))
        for index in 1...activities {
            try await store.execute(request(index), on: stream("a\(index)"), at: start)
        }
        try await store.execute(update(0), on: stream("a1"), at: start)

        report(
            "clients: \(clients), writers: \(writers.map(String.init) ?? "the store's default"), seconds per run: \(seconds), rounds: \(rounds), activities: \(activities)"
        )
        // pgbench, updates and openings take turns, so that none gains from running later in the
        // cluster's life (a larger log, autovacuum, new WAL segments).
        let script = try await pgbenchScript(pool, clients: clients)
        let openingScript = try await pgbenchOpeningScript(pool)
        var pgbenchTotal = 0.0
        var pgbenchOpeningsTotal = 0.0
        var updatesTotal = 0.0
        var opensTotal = 0.0
        for round in 1...rounds {
            let pgbench = try runPgbench(script: script, cluster: cluster, clients: clients, seconds: seconds)
            report(
                String(
                    format: "round %d  pgbench: the same two statements                   %8.0f transactions/s  %@",
                    round,
                    pgbench.rate,
                    pgbench.cpu
                )
            )
            let updates = try await measure(clients: clients, seconds: seconds, cluster: cluster, batches: batches) {
                client,
                iteration in
                // Each client updates activities of its own, as each pgbench client does.
                let index = client * (activities / clients) + Int.random(in: 1...(activities / clients))
                return try await store.execute(update(iteration), on: stream("a\(index)"), at: now())
            }
            report(
                String(
                    format:
                        "round %d  store: updates (load + decide + liveline_append)   %8.0f commands/s  %@  (%d conflicts, %.1f per batch)",
                    round,
                    updates.rate,
                    updates.cpu,
                    updates.conflicts,
                    updates.perBatch
                )
            )
            let opens = try await measure(clients: clients, seconds: seconds, cluster: cluster, batches: batches) {
                client,
                iteration in
                try await store.execute(
                    request(iteration, device: "device-\(iteration % 500)"),
                    on: stream("open-\(round)-\(client)-\(iteration)"),
                    at: now()
                )
            }
            report(
                String(
                    format:
                        "round %d  store: opening with app, device and global caps    %8.0f commands/s  %@  (%.1f per batch)",
                    round,
                    opens.rate,
                    opens.cpu,
                    opens.perBatch
                )
            )
            let pressed = try await measure(clients: clients, seconds: seconds, cluster: cluster, batches: batches) {
                client,
                iteration in
                let slot = Int(Date().timeIntervalSince1970 * 500)
                return try await store.execute(
                    request(iteration, device: "device-\(slot)"),
                    on: StreamID(app: cappedApp, activity: ActivityID(rawValue: "c-\(round)-\(client)-\(iteration)")!),
                    at: now()
                )
            }
            report(
                String(
                    format:
                        "round %d  store: opening under cap pressure (4 per device)   %8.0f commands/s  %@  (%.0f %% refused, %.1f per batch)",
                    round,
                    pressed.rate,
                    pressed.cpu,
                    100 * pressed.refused,
                    pressed.perBatch
                )
            )
            let pgbenchOpenings = try runPgbench(
                script: openingScript,
                cluster: cluster,
                clients: clients,
                seconds: seconds
            )
            report(
                String(
                    format: "round %d  pgbench: the same two statements as an opening    %8.0f transactions/s  %@",
                    round,
                    pgbenchOpenings.rate,
                    pgbenchOpenings.cpu
                )
            )
            pgbenchOpeningsTotal += pgbenchOpenings.rate
            pgbenchTotal += pgbench.rate
            updatesTotal += updates.rate
            opensTotal += opens.rate
        }
        await pool.shutdown()

        report(
            String(
                format: "\nappend path / pgbench:       %5.1f %%  (target ≥ 150 %%, #20)",
                100 * updatesTotal / pgbenchTotal
            )
        )
        report(
            String(
                format: "opening with caps / updates: %5.1f %%  (target ≥ 90 %%, #20)",
                100 * opensTotal / updatesTotal
            )
        )
        report(
            String(
                format: "the same in pgbench:         %5.1f %%  (the SQL alone: opening / update)",
                100 * pgbenchOpeningsTotal / pgbenchTotal
            )
        )
    }

    static func stream(_ id: String) -> StreamID { StreamID(app: app, activity: ActivityID(rawValue: id)!) }

    static func now() -> Timestamp { Timestamp(microsecondsSince1970: Int64(Date().timeIntervalSince1970 * 1_000_000)) }

    static func request(_ index: Int, device: String? = nil) -> Command {
        .request(
            .init(
                activityType: "delivery",
                attributes: JSONObject(["order": .string("A-\(index)"), "store": .string("Lyon 3")]),
                content: ActivityContent(contentState: content(index)),
                deviceID: device.flatMap(DeviceID.init(rawValue:))
            )
        )
    }

    static func update(_ step: Int) -> Command {
        .update(.init(content: ActivityContent(contentState: content(step)), priority: .low))
    }

    static func content(_ step: Int) -> JSONObject {
        JSONObject([
            "status": .string(["preparing", "on the way", "nearby", "delivered"][step % 4]),
            "etaMinutes": .number(JSONNumber(step % 45)),
            "courier": .object(["name": .string("Sam"), "rating": .number(4.9)]),
        ])
    }

    /// Runs `operation` from `clients` tasks for `seconds`; the rate of decided commands (accepted
    /// or refused), the CPU that this process and PostgreSQL spent on each, and the share refused.
    static func measure(
        clients: Int,
        seconds: Int,
        cluster: EmbeddedPostgres,
        batches: WriteBatches,
        _ operation: @escaping @Sendable (Int, Int) async throws -> CommandResult
    ) async throws -> (rate: Double, cpu: String, conflicts: Int, perBatch: Double, refused: Double) {
        let cpu = CPUTime.now(of: cluster)
        let batchesBefore = batches.count()
        let deadline = ContinuousClock.now + .seconds(seconds)
        let began = ContinuousClock.now
        let counts = try await withThrowingTaskGroup(of: (Int, Int, Int).self) { group in
            for client in 0..<clients {
                group.addTask {
                    var decided = 0
                    var refused = 0
                    var conflicts = 0
                    var iteration = 0
                    while ContinuousClock.now < deadline {
                        iteration += 1
                        do {
                            let result = try await operation(client, iteration)
                            decided += 1
                            if case .rejected = result.outcome { refused += 1 }
                        } catch EventStoreError.versionConflict {
                            conflicts += 1
                        }
                    }
                    return (decided, refused, conflicts)
                }
            }
            return try await group.reduce(into: (0, 0, 0)) {
                $0.0 += $1.0
                $0.1 += $1.1
                $0.2 += $1.2
            }
        }
        let elapsed = ContinuousClock.now - began
        return (
            Double(counts.0) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18),
            cpuPerCommand(since: cpu, cluster, count: counts.0, isClient: true),
            counts.2,
            batches.commandsPerBatch(since: batchesBefore),
            Double(counts.1) / Double(max(counts.0, 1))
        )
    }

    /// The CPU that PostgreSQL, and this process when it was the client (`isClient`), spent since
    /// `earlier` on each of `count` commands or transactions, as the benchmark reports it.
    static func cpuPerCommand(since earlier: CPUTime, _ cluster: EmbeddedPostgres, count: Int, isClient: Bool) -> String
    {
        let (own, postgres) = CPUTime.now(of: cluster).microseconds(since: earlier, per: Double(max(count, 1)))
        let store = isClient ? String(format: "store %3.0f µs, ", own) : ""
        return "(CPU each: \(store)" + String(format: "PostgreSQL %3.0f µs)", postgres)
    }

    /// The store's two statements for an update, and the values of a real one. The projection
    /// row and the event data are variables, which `-M prepared` sends as parameters on every
    /// execution, as the store does, rather than constants parsed once at prepare time.
    static func pgbenchScript(
        _ pool: ConnectionPool,
        clients: Int
    ) async throws -> (script: String, variables: [String: String]) {
        let (row, data) = try await sample(eventType: "activity.updated", pool)
        let script = """
            \\set n :client_id * \(activities / clients) + random(1, \(activities / clients))
            SELECT a.max_open, a.max_open_per_device, a.priority_budget_per_hour, a.frequent_updates, NULL::bigint, NULL::bigint, (SELECT global_max_open FROM service_limits), NULL::integer, r.*, r.version AS v FROM apps a LEFT JOIN liveline_activity_rows r ON r.app_id = a.app_id AND r.activity_id = 'a' || :n WHERE a.app_id = 'bench' \\gset
            SELECT first_position, recorded_at FROM liveline_append('bench', 'a' || :n, :v, jsonb_set(:row::jsonb, '{version}', to_jsonb(:v + 1)), ARRAY['activity.updated'], ARRAY[:data::jsonb], ARRAY['app'], ARRAY[now()], 0, NULL, NULL, NULL);

            """
        return (script, ["row": row, "data": data])
    }

    /// The store's two statements for opening an activity with a device (every cap enforced),
    /// with the values of a real opening: the SQL alone, to set the openings' rate beside.
    static func pgbenchOpeningScript(
        _ pool: ConnectionPool
    ) async throws -> (
        script: String, variables: [String: String]
    ) {
        let (row, data) = try await sample(
            removing: ["app_stripe", "global_stripe"],
            setting: #"{"version": 1, "state": "active"}"#,
            eventType: "activity.requested",
            pool
        )
        let script = """
            \\set n random(1, 9000000000000000000)
            \\set d :n % 500
            SELECT a.max_open, a.max_open_per_device, a.priority_budget_per_hour, a.frequent_updates, (SELECT sum(open) FROM app_open_stripes s WHERE s.app_id = a.app_id)::bigint, (SELECT sum(open) FROM global_open_stripes)::bigint, (SELECT global_max_open FROM service_limits), (SELECT open FROM device_open_counts d WHERE d.app_id = a.app_id AND d.device_id = 'device-' || :d), r.* FROM apps a LEFT JOIN liveline_activity_rows r ON r.app_id = a.app_id AND r.activity_id = 'o' || :n WHERE a.app_id = 'bench';
            SELECT first_position, recorded_at FROM liveline_append('bench', 'o' || :n, 0, :row::jsonb || jsonb_build_object('activity_id', 'o' || :n, 'device_id', 'device-' || :d), ARRAY['activity.requested'], ARRAY[:data::jsonb], ARRAY['app'], ARRAY[now()], 0, NULL, NULL, NULL);

            """
        return (script, ["row": row, "data": data])
    }

    /// Real values for a script: activity `a1`'s projection row as JSON, less the members
    /// `removing`, with those of `setting`; and the data of an event of `eventType`.
    static func sample(
        removing: [String] = [],
        setting: String = "{}",
        eventType: String,
        _ pool: ConnectionPool
    ) async throws -> (row: String, data: String) {
        try await pool.withConnection { connection in
            let row: String = try connection.query(
                """
                SELECT (to_jsonb(p) - \(PostgresArray(removing)) || \(JSONB(setting)))::text
                FROM activities p WHERE activity_id = 'a1'
                """
            ).single!.decode(0)
            let data: String = try connection.query(
                "SELECT data::text FROM events WHERE type = \(eventType) LIMIT 1"
            ).single!.decode(0)
            return (row, data)
        }
    }

    /// Runs pgbench with `script`; its rate of transactions (each the two statements), and the CPU
    /// that PostgreSQL spent on each.
    static func runPgbench(
        script: (script: String, variables: [String: String]),
        cluster: EmbeddedPostgres,
        clients: Int,
        seconds: Int
    ) throws -> (rate: Double, cpu: String) {
        let cpu = CPUTime.now(of: cluster)
        let file = FileManager.default.temporaryDirectory.appending(path: "liveline-append-\(getpid()).sql")
        defer { try? FileManager.default.removeItem(at: file) }
        try script.script.write(to: file, atomically: true, encoding: .utf8)
        let (status, text) = try ChildProcess.run(
            [
                "pgbench", "-h", cluster.configuration.socketDirectory.path, "-U", cluster.configuration.superuser,
                "-n",
                "-c", "\(clients)", "-j", "\(min(clients, 2))", "-T", "\(seconds)", "-M", "prepared", "-f", file.path,
            ] + script.variables.sorted { $0.key < $1.key }.flatMap { ["-D", "\($0.key)=\($0.value)"] } + ["bench"]
        )
        guard status == 0, !text.contains("aborted"),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("tps = ") }),
            let rate = Double(line.dropFirst(6).prefix { $0 == "." || $0.isNumber })
        else {
            throw BenchmarkError("pgbench failed:\n\(text)")
        }
        let failures = text.split(separator: "\n").first { $0.contains("number of failed transactions") }
        report("pgbench: \(failures.map(String.init) ?? "no failures reported")")
        return (rate, cpuPerCommand(since: cpu, cluster, count: Int(rate) * seconds, isClient: false))
    }

    static func value(of option: String, in arguments: [String]) -> String? {
        arguments.firstIndex(of: option).flatMap { arguments.indices.contains($0 + 1) ? arguments[$0 + 1] : nil }
    }
}

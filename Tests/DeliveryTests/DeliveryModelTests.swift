import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import NIOConcurrencyHelpers
import PropertyBased
import PropertyChecks
import Testing

@testable import Delivery

/// A model of the delivery worker, checked: the worker's own steps (`DeliveryCycle` over its
/// `DeliveryBook`) against a ledger kept in memory, with random appends, APNs answers (200, 429,
/// 503, no answer, 403), credential fixes, database outages, crashes, restarts and handovers
/// between two processes at any step. What a process recorded survives it; what it only knew
/// does not. After the storm, the world heals (credentials fixed, APNs answering 200) and:
///
/// - no activity's newest push is lost: each activity with a token has a `delivered` outcome at
///   or after its newest event that asks for a push;
/// - APNs never gets an activity's push after a newer one;
/// - a push-to-start that APNs may have received (200, no answer, or on the wire at a crash) is
///   never sent again;
/// - nothing stays held, unreadable or unsettled.
///
/// `LIVELINE_MODEL_RUNS` sets how many random histories are checked (default 1,500).
@Suite("Delivery worker model")
struct DeliveryModelTests {
    struct Step: Sendable, CustomStringConvertible {
        let kind: Int
        let a: Int
        let b: Int

        var description: String {
            let names = [
                "update", "update", "update", "end", "token", "cycle", "cycle", "answer", "answer", "record",
                "crash", "leases", "fix credentials", "time", "database",
            ]
            return "\(names[kind])(\(a),\(b))"
        }
    }

    static let steps = zip(Gen.int(in: 0...14), Gen.int(in: 0...7), Gen.int(in: 0...5))
        .map { Step(kind: $0, a: $1, b: $2) }
        .array(of: 1...80)

    static let runs = ProcessInfo.processInfo.environment["LIVELINE_MODEL_RUNS"].flatMap(Int.init) ?? 1500

    @Test(
        "nothing is lost, nothing goes out of order, no start goes twice — across crashes, handovers, outages and credential fixes"
    )
    func theWorkerKeepsItsPromises() async {
        await checkProperty(count: Self.runs, input: Self.steps) { steps in
            let world = ModelWorld()
            for step in steps {
                await world.apply(step)
                // The steps never wait: give the other tests' tasks their turn on the shared threads.
                await Task.yield()
            }
            await world.heal()
            world.check()
        }
    }

    @Test("a restart while another shard's push is retried folds every stream: the case of issue #38")
    func restartWhileAnotherShardRetries() async {
        // Activity 1 retried (503) holds its shard's cursor back; activity 2, in another shard, is
        // updated and delivered; a restart reads from the lower cursor, and activity 2's next
        // update must still fold and go.
        await Self.replay([
            (11, 0), (5, 0), (0, 1), (5, 0), (7, 3), (9, 0), (0, 2), (5, 0), (7, 0), (9, 0), (10, 0), (11, 0),
            (0, 2), (5, 0), (5, 0),
        ])
    }

    @Test("a held start offered again and on its way at a crash is not sent again: found by the model")
    func aResumedStartUnderWayAtACrashIsNotSentAgain() async {
        // The start is refused 403 after the credentials were fixed, so it is held and offered
        // again at once; its second `sending` is recorded, it goes, and the worker dies. The
        // next worker finds the hold: the start is failed, not sent a third time.
        await Self.replay([
            (11, 0), (5, 0), (9, 0), (5, 0), (12, 0), (14, 0), (7, 6), (14, 0), (5, 0), (9, 0), (5, 0), (10, 0),
        ])
    }

    /// Runs a trace (each step's kind and first argument) in a fresh world, lets the world heal,
    /// and checks the promises.
    private static func replay(_ trace: [(kind: Int, a: Int)]) async {
        let world = ModelWorld()
        for (kind, a) in trace { await world.apply(Step(kind: kind, a: a, b: 0)) }
        await world.heal()
        world.check()
    }
}

/// The shared database of the model: the log, and what delivery recorded.
final class ModelDatabase: Sendable {
    struct State {
        var log: [StoredEvent] = []
        var records: [DeliveryRecord] = []
        var cursors: [Int: Int64] = Dictionary(uniqueKeysWithValues: (0..<DeliveryShard.count).map { ($0, 0) })
        var owners: [Int: Int] = [:]
        var holds: [HoldKey: Hold] = [:]
        var credentialsUpdatedAt = Timestamp(microsecondsSince1970: 1_000_000)
        var suspendedCredentials: Timestamp? = nil
        var invalidations: [StreamID: [String: Timestamp]] = [:]
        var isDown = false
    }

    let state = NIOLockedValueBox(State())

    struct Unavailable: Error {}
}

/// One process's view of the database.
struct ModelLedger: DeliveryLedger {
    let database: ModelDatabase
    let process: Int

    func events(after position: Int64, limit: Int) async throws -> [StoredEvent] {
        try database.state.withLockedValue { state in
            guard !state.isDown else { throw ModelDatabase.Unavailable() }
            return Array(state.log.filter { $0.position > position }.prefix(limit))
        }
    }

    func histories(_ requests: [StreamID: HistoryRequest]) async throws -> StreamHistories {
        try database.state.withLockedValue { state in
            guard !state.isDown else { throw ModelDatabase.Unavailable() }
            var histories = StreamHistories()
            for (stream, request) in requests {
                histories.events[stream] = state.log.filter {
                    $0.stream == stream && $0.event.version > request.afterVersion
                        && $0.position <= request.throughPosition
                }
                histories.invalidations[stream] = state.invalidations[stream]
            }
            return histories
        }
    }

    func app(_ app: AppID, at now: Timestamp) async throws -> AppDelivery? {
        try database.state.withLockedValue { state in
            guard !state.isDown else { throw ModelDatabase.Unavailable() }
            return AppDelivery(
                topic: PushRenderer.topic(for: "com.example.game"),
                credentials: DeliveryBookPropertyTests.credentials,
                credentialsUpdatedAt: state.credentialsUpdatedAt,
                suspended: state.suspendedCredentials == state.credentialsUpdatedAt,
                readAt: now
            )
        }
    }

    func record(_ pending: DeliveryBook.Pending, cursors: [Int: Int64]) async throws {
        try database.state.withLockedValue { state in
            guard !state.isDown else { throw ModelDatabase.Unavailable() }
            state.records += pending.records
            for invalidation in pending.invalidations {
                state.invalidations[invalidation.stream, default: [:]][invalidation.deviceToken] = invalidation.since
            }
            for suspension in pending.suspensions { state.suspendedCredentials = suspension.credentialsUpdatedAt }
            let writes = pending.writes
            for key in writes.released { state.holds[key] = nil }
            for hold in writes.held { state.holds[HoldKey(stream: hold.stream, position: hold.position)] = hold }
            for (shard, cursor) in cursors where state.owners[shard] == process {
                state.cursors[shard] = max(state.cursors[shard]!, cursor)
            }
        }
    }

    func release(_ cursors: [Int: Int64]) async throws {
        try database.state.withLockedValue { state in
            guard !state.isDown else { throw ModelDatabase.Unavailable() }
            for (shard, cursor) in cursors where state.owners[shard] == process {
                state.cursors[shard] = max(state.cursors[shard]!, cursor)
                state.owners[shard] = nil
            }
        }
    }
}

/// Two processes, a database, a simulated APNs, and a log of six activities: two in shards of
/// their own, a remote start, one without a token.
final class ModelWorld: @unchecked Sendable {
    final class Process {
        let id: Int
        let book: NIOLockedValueBox<DeliveryBook>
        let cycle: DeliveryCycle<ModelLedger>
        var wire: [DeliveryBook.Send] = []

        init(id: Int, database: ModelDatabase, clock: @escaping @Sendable () -> Timestamp) {
            self.id = id
            book = NIOLockedValueBox(
                DeliveryBook(renderer: PushRenderer(policy: .standard), lifecycle: Lifecycle(), maximumAttempts: 1000)
            )
            cycle = DeliveryCycle(
                book: book,
                ledger: ModelLedger(database: database, process: id),
                batchSize: 3,
                appRefresh: .seconds(1),
                clock: clock
            )
        }
    }

    /// What APNs was sent for an activity: the position, whether it was a start, and whether
    /// APNs may have received it.
    struct Sent {
        let position: Int64
        let startsActivity: Bool
        var mayHaveReceived: Bool
    }

    static let app = DeliveryBookPropertyTests.app
    let lifecycle = Lifecycle()
    let database = ModelDatabase()
    let time = NIOLockedValueBox(Timestamp(microsecondsSince1970: 1_800_000_000_000_000))
    var processes: [Int: Process] = [:]
    var activities: [Activity?] = Array(repeating: nil, count: 6)
    var sent: [StreamID: [Sent]] = [:]
    var step = 0
    var nextProcess = 0
    var trace: [String] = []

    var now: Timestamp { time.withLockedValue { $0 } }

    init() {
        for index in activities.indices {
            var request = Command.Request(activityType: "A", content: ActivityContent(contentState: .empty))
            if index == 4 {
                request.deviceID = DeviceID(rawValue: "phone")
                request.remoteStart = RemoteStart(
                    pushToStartToken: String(repeating: "ab", count: 32),
                    alert: Alert(title: "Go", body: "Now")
                )
            }
            run(.request(request), on: index)
            if index < 4 { run(.registerPushToken(Self.token(index, 0)), on: index) }
        }
    }

    static func token(_ index: Int, _ generation: Int) -> String {
        String(repeating: "\(index)\(generation)", count: 32)
    }

    func stream(_ index: Int) -> StreamID {
        StreamID(app: Self.app, activity: ActivityID(rawValue: "activity-\(index)")!)
    }

    func run(_ command: Command, on index: Int) {
        let context = DecisionContext(
            app: AppRules(maxOpen: 10, priorityBudgetPerHour: 1000),
            globalMaxOpen: 100,
            open: OpenCounts(app: 0, global: 0)
        )
        guard let events = try? lifecycle.decide(command, for: activities[index], at: now, context: context) else {
            return
        }
        database.state.withLockedValue { state in
            for event in events {
                activities[index] = try! lifecycle.evolve(activities[index], with: event)
                let position = Int64(state.log.count + 1)
                state.log.append(StoredEvent(position: position, stream: stream(index), event: event, recordedAt: now))
            }
        }
    }

    func apply(_ step: DeliveryModelTests.Step) async {
        trace.append(step.description)
        time.withLockedValue { $0 = $0 + .milliseconds(10) }
        switch step.kind {
        case 0...2:
            self.step += 1
            let content = ActivityContent(contentState: JSONObject(["step": .number(JSONNumber(self.step))]))
            run(.update(.init(content: content, priority: step.b < 3 ? .low : .high)), on: step.a % 6)
        case 3 where step.b == 0:
            run(.end(.init()), on: step.a % 6)
        case 3:
            break
        case 4:
            let index = step.a % 6
            run(.registerPushToken(Self.token(index, step.b + 1)), on: index)
        case 5, 6:
            await cycle(process(step.b))
        case 7, 8:
            answer(process(step.b), with: step.a)
        case 9:
            if let process = process(step.b) { _ = try? await process.cycle.record() }
        case 10:
            crash(process(step.b))
        case 11:
            if processes.count < 2 { start() }
            for process in processes.values { await maintainLeases(process) }
        case 12:
            fixCredentials()
        case 13:
            time.withLockedValue { $0 = $0 + .milliseconds(200 * (step.a + 1)) }
        default:
            database.state.withLockedValue { $0.isDown.toggle() }
        }
    }

    func process(_ choice: Int) -> Process? {
        let ids = processes.keys.sorted()
        return ids.isEmpty ? nil : processes[ids[choice % ids.count]]
    }

    func start() {
        let clock: @Sendable () -> Timestamp = { [time] in time.withLockedValue { $0 } }
        let process = Process(id: nextProcess, database: database, clock: clock)
        nextProcess += 1
        processes[process.id] = process
    }

    /// What `DeliveryWorker.maintainLeases` does: a fair share of the shards, drained or claimed.
    func maintainLeases(_ process: Process) async {
        let change: DeliveryBook.ShardChange? = database.state.withLockedValue { state in
            guard !state.isDown else { return nil }
            let held = Set(state.owners.filter { $0.value == process.id }.keys)
            let share = (DeliveryShard.count + processes.count - 1) / processes.count
            if held.count > share { return .drain(Set(held.sorted().suffix(held.count - share))) }
            let free = (0..<DeliveryShard.count).filter { state.owners[$0] == nil }.prefix(share - held.count)
            guard !free.isEmpty else { return nil }
            var cursors: [Int: Int64] = [:]
            for shard in free {
                state.owners[shard] = process.id
                cursors[shard] = state.cursors[shard]
            }
            let lowest = cursors.values.min()!
            // As `DeliveryQueries.settledPositions` reads them.
            let rows = state.records.filter {
                $0.position > lowest && $0.outcome != .retrying && cursors[DeliveryShard.of($0.stream)] != nil
            }
            let byPosition = Dictionary(grouping: rows, by: \.position)
            let interrupted = byPosition.filter { $0.value.last?.outcome == .sending }.keys
            // As `DeliveryQueries.holds` reads them.
            let holds = state.holds.values.filter { cursors[DeliveryShard.of($0.stream)] != nil }.map { hold in
                var hold = hold
                hold.underWay =
                    hold.startsActivity
                    && state.records.last { $0.position == hold.position && $0.outcome != .retrying }?.outcome
                        == .sending
                return hold
            }
            return .adopt(
                cursors: cursors,
                settled: Set(byPosition.keys),
                interrupted: Set(interrupted),
                holds: Array(holds)
            )
        }
        if let change { process.book.withLockedValue { $0.queue(change) } }
    }

    /// One turn of the worker's loop: read (on while pages are full), prepare, send.
    func cycle(_ process: Process?) async {
        guard let process else { return }
        do {
            for _ in 0..<4 where try await !process.cycle.read() {}
            try await process.cycle.prepare()
        } catch {
            return
        }
        for send in process.cycle.takeReady(limit: 100) {
            sent[send.stream, default: []].append(
                Sent(position: send.position, startsActivity: send.request.startsActivity, mayHaveReceived: true)
            )
            process.wire.append(send)
        }
    }

    /// Answers the oldest push on the process's wire.
    func answer(_ process: Process?, with choice: Int) {
        guard let process, !process.wire.isEmpty else { return }
        let send = process.wire.removeFirst()
        let response: APNsResponse =
            switch choice {
            case 3: .answered(status: 503, reason: "ServiceUnavailable", tokenInvalidSince: nil, apnsID: nil)
            case 4: .answered(status: 429, reason: "TooManyRequests", tokenInvalidSince: nil, apnsID: nil)
            case 5: .unanswered("timeout")
            case 6: .answered(status: 403, reason: "InvalidProviderToken", tokenInvalidSince: nil, apnsID: nil)
            default: .answered(status: 200, reason: nil, tokenInvalidSince: nil, apnsID: send.request.apnsID)
            }
        if case .answered(let status, _, _, _) = response, status != 200,
            let index = sent[send.stream]?.lastIndex(where: {
                $0.position == send.position
            })
        {
            sent[send.stream]![index].mayHaveReceived = false
        }
        let now = self.now
        _ = process.book.withLockedValue {
            $0.finish(
                send,
                response: response,
                latency: .milliseconds(5),
                at: now,
                backoff: { _ in .milliseconds(500) }
            )
        }
    }

    /// The process dies: what it knew is gone, its leases run out.
    func crash(_ process: Process?) {
        guard let process else { return }
        processes[process.id] = nil
        database.state.withLockedValue { state in
            for (shard, owner) in state.owners where owner == process.id { state.owners[shard] = nil }
        }
    }

    func fixCredentials() {
        database.state.withLockedValue { $0.credentialsUpdatedAt = $0.credentialsUpdatedAt + .seconds(1) }
        for process in processes.values { process.book.withLockedValue { $0.credentialsChanged() } }
    }

    /// The database comes back, credentials are fixed when suspended, APNs answers 200, and the
    /// processes run until everything settled.
    func heal() async {
        database.state.withLockedValue { $0.isDown = false }
        if processes.isEmpty { start() }
        for round in 0..<40 {
            if database.state.withLockedValue({ $0.suspendedCredentials == $0.credentialsUpdatedAt }) {
                fixCredentials()
            }
            for process in processes.values.sorted(by: { $0.id < $1.id }) {
                await maintainLeases(process)
                await cycle(process)
                while !process.wire.isEmpty { answer(process, with: 0) }
                _ = try? await process.cycle.record()
            }
            time.withLockedValue { $0 = $0 + (round < 20 ? .seconds(2) : .seconds(30)) }
        }
    }

    func check() {
        let state = database.state.withLockedValue { $0 }
        let context = "trace: \(trace.joined(separator: " "))"
        for index in activities.indices {
            let stream = stream(index)
            // What the log asks for: the newest event that renders a push.
            var delivery: DeliveryState? = nil
            var newest: Int64? = nil
            for stored in state.log where stored.stream == stream {
                delivery = try! DeliveryState(delivery, folding: stored.event, by: lifecycle)
                if case .push = PushRenderer(policy: .standard).render(stored, leaving: delivery!, topic: "t") {
                    newest = stored.position
                }
            }
            let delivered = state.records.filter { $0.stream == stream && $0.outcome == .delivered }.map(\.position)
            // A start APNs may have received and did not confirm fails, and is not sent again.
            let startFailed = state.records.contains { $0.stream == stream && $0.version == 1 && $0.outcome == .failed }
            if let newest, !startFailed {
                #expect(
                    delivered.contains { $0 >= newest },
                    "activity \(index): position \(newest) never delivered (delivered: \(delivered)); \(context)"
                )
            }
            let positions = (sent[stream] ?? []).map(\.position)
            #expect(
                positions == positions.sorted(),
                "activity \(index): APNs got \(positions), a push after a newer one; \(context)"
            )
            let starts = (sent[stream] ?? []).filter(\.startsActivity)
            if let first = starts.firstIndex(where: \.mayHaveReceived) {
                #expect(
                    starts.count == first + 1,
                    "activity \(index): a start sent again after APNs may have received it; \(context)"
                )
            }
        }
        #expect(state.holds.isEmpty, "still held: \(state.holds.keys); \(context)")
        for process in processes.values {
            let book = process.book.withLockedValue { $0 }
            #expect(book.unreadable.isEmpty, "unreadable: \(book.unreadable); \(context)")
            #expect(book.lanes.isEmpty, "unsettled lanes: \(book.lanes.keys); \(context)")
        }
    }
}

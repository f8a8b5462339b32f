import PropertyBased
import PropertyChecks
import Testing

@testable import EventStore

/// The write path's scheduling, without a database: who runs which commands, when.
@Suite("The batch schedule: nothing waits for company, one command per activity at a time")
struct BatchScheduleTests {
    /// A command on activity `activity`; `number` tells commands apart.
    struct Item: Batchable, Equatable, CustomStringConvertible {
        let number: Int
        let activity: Int
        var batchKeys: [Int] { [activity] }
        var description: String { "\(number)@\(activity)" }
    }

    /// A schedule whose one running writer has taken its first command, item 0.
    static func busy(writers: Int, batchLimit: Int) -> (BatchSchedule<Item>, Item) {
        var schedule = BatchSchedule<Item>(writers: writers, batchLimit: batchLimit)
        let first = Item(number: 0, activity: 0)
        _ = schedule.enqueue(first)
        _ = schedule.next(after: [], retrying: [])
        return (schedule, first)
    }

    @Test("a command into an idle queue starts a writer at once and is its whole batch")
    func idleQueueStartsAWriterAtOnce() {
        var schedule = BatchSchedule<Item>(writers: 2, batchLimit: 8)
        let command = Item(number: 1, activity: 1)
        let started = schedule.enqueue(command)
        let batch = schedule.next(after: [], retrying: [])
        #expect(started && batch == [command])
        // The writer finishes and finds nothing: it stops, and the next command starts one again.
        let after = schedule.next(after: [command], retrying: [])
        #expect(after == nil && schedule.running == 0)
        let startedAgain = schedule.enqueue(Item(number: 2, activity: 1))
        #expect(startedAgain)
    }

    @Test("commands that arrive while every writer is busy go together in the next batch, in arrival order")
    func busyWritersBatch() {
        var (schedule, first) = Self.busy(writers: 1, batchLimit: 3)
        let waiting = (1...4).map { Item(number: $0, activity: $0) }
        let started = waiting.map { schedule.enqueue($0) }
        #expect(started == [false, false, false, false])
        let second = schedule.next(after: [first], retrying: [])
        let third = schedule.next(after: second ?? [], retrying: [])
        #expect(second == Array(waiting.prefix(3)) && third == [waiting[3]])
    }

    @Test("a batch holds one command per activity; the next waits for the batch holding it, then goes")
    func oneCommandPerActivity() {
        var schedule = BatchSchedule<Item>(writers: 2, batchLimit: 2)
        let a1 = Item(number: 1, activity: 1)
        let a2 = Item(number: 2, activity: 1)
        let (b, c) = (Item(number: 3, activity: 2), Item(number: 4, activity: 3))
        _ = schedule.enqueue(a1)
        let first = schedule.next(after: [], retrying: [])
        // Three queued are more than a batch takes: a second writer starts, and skips a2, whose
        // activity the first writer holds.
        let started = [a2, b, c].map { schedule.enqueue($0) }
        let second = schedule.next(after: [], retrying: [])
        let firstWriterAfterA1 = schedule.next(after: [a1], retrying: [])
        let secondWriterAfterBC = schedule.next(after: [b, c], retrying: [])
        #expect(first == [a1] && started == [false, false, true] && second == [b, c])
        #expect(firstWriterAfterA1 == [a2] && secondWriterAfterBC == nil)
    }

    @Test(
        "commands arriving while a writer is busy wait for its next batch; another writer starts only when more queue than a batch takes"
    )
    func anotherWriterForAFullQueue() {
        var (schedule, _) = Self.busy(writers: 2, batchLimit: 3)
        let waiting = (1...3).map { Item(number: $0, activity: $0) }
        let startedForWaiting = waiting.map { schedule.enqueue($0) }
        // A fourth queued command is more than one batch takes.
        let startedForTheFourth = schedule.enqueue(Item(number: 4, activity: 4))
        let batch = schedule.next(after: [], retrying: [])
        #expect(startedForWaiting == [false, false, false] && startedForTheFourth && batch == waiting)
    }

    @Test(
        "a writer that finds nothing stays ready if it may: what comes then starts no other writer and is its next batch"
    )
    func readyWriter() {
        var (schedule, first) = Self.busy(writers: 2, batchLimit: 4)
        let ready = schedule.next(after: [first], retrying: [], mayStop: false)
        let command = Item(number: 1, activity: 1)
        let started = schedule.enqueue(command)
        let batch = schedule.next(after: [], retrying: [], mayStop: false)
        #expect(ready == [] && schedule.running == 1 && !started && batch == [command])
        // Ready no longer, with nothing to take: it stops.
        let stopped = schedule.next(after: [command], retrying: [])
        #expect(stopped == nil && schedule.running == 0)
    }

    @Test("commands that queue while a writer decides its batch join it, up to the batch's limit, one per activity")
    func joiningABatch() {
        var (schedule, first) = Self.busy(writers: 1, batchLimit: 3)
        let sameActivity = Item(number: 1, activity: first.activity)
        let others = (2...4).map { Item(number: $0, activity: $0) }
        for item in [sameActivity] + others { _ = schedule.enqueue(item) }
        let joined = schedule.joining(batchOf: 1)
        let joinedAgain = schedule.joining(batchOf: 3)
        #expect(joined == Array(others.prefix(2)) && joinedAgain == [] && schedule.running == 1)
        let next = schedule.next(after: [first] + joined, retrying: [])
        #expect(next == [sameActivity, others[2]])
    }

    @Test("a command decided again goes ahead of everything queued")
    func retriesGoFirst() {
        var schedule = BatchSchedule<Item>(writers: 1, batchLimit: 2)
        let retried = Item(number: 1, activity: 1)
        _ = schedule.enqueue(retried)
        _ = schedule.next(after: [], retrying: [])
        let later = [Item(number: 2, activity: 1), Item(number: 3, activity: 2), Item(number: 4, activity: 3)]
        for item in later { _ = schedule.enqueue(item) }
        let next = schedule.next(after: [retried], retrying: [retried])
        #expect(next == [retried, later[1]])
    }

    // MARK: Properties

    /// 0–5: a command on activity `activity` arrives; 6–8: writer `writer` finishes its batch (one in three of its commands decided again),
    /// and stays ready if it finds nothing and `activity` is even; 9: writer `writer`'s batch fails; 10: what queued joins writer
    /// `writer`'s batch.
    struct Step: Sendable, CustomStringConvertible {
        let kind: Int
        let activity: Int
        let writer: Int
        var description: String { "(\(kind) #\(activity) w\(writer))" }
    }

    static let steps = zip(Gen.int(in: 0...10), Gen.int(in: 0...4), Gen.int(in: 0...2))
        .map { Step(kind: $0, activity: $1, writer: $2) }
        .array(of: 1...80)

    @Test(
        "however commands arrive and writers finish: no activity in two running batches, no command left without a writer, each activity's commands taken in arrival order"
    )
    func scheduleProperties() async {
        await checkProperty(count: 500, input: Self.steps) { steps in
            var schedule = BatchSchedule<Item>(writers: 3, batchLimit: 4)
            var batches: [[Item]] = []  // one per running writer
            var arrived: [Item] = []
            var taken: [Item] = []
            func start() {
                if let batch = schedule.next(after: [], retrying: []) { batches.append(batch) }
            }
            for step in steps {
                switch step.kind {
                case 0...5:
                    let item = Item(number: arrived.count, activity: step.activity)
                    arrived.append(item)
                    if schedule.enqueue(item) { start() }
                default:
                    guard !batches.isEmpty else { continue }
                    let index = step.writer % batches.count
                    let batch = batches[index]
                    let next: [Item]?
                    if step.kind == 10 {
                        batches[index] += schedule.joining(batchOf: batch.count)
                        next = batches[index]
                    } else if step.kind == 9 {
                        // Its commands are answered with the failure; the writer goes on.
                        schedule.release(batch)
                        next = schedule.next(after: [], retrying: [])
                    } else {
                        let retrying = batch.enumerated().filter { $0.offset % 3 == 2 }.map(\.element)
                        next = schedule.next(after: batch, retrying: retrying, mayStop: step.activity % 2 == 1)
                    }
                    if let next {
                        batches[index] = next
                    } else {
                        batches.remove(at: index)
                    }
                }
                taken += batches.flatMap { $0 }.filter { item in !taken.contains(item) }
                let running = batches.flatMap { $0 }
                #expect(Set(running.map(\.activity)).count == running.count, "an activity in two batches")
                #expect(batches.allSatisfy { $0.count <= schedule.batchLimit }, "a batch over the limit")
                let (writers, limit) = (schedule.running, schedule.writers)
                #expect(writers == batches.count && writers <= limit)
                // A free command waits only for a busy writer's next batch, when that batch can
                // take everything queued.
                let free = schedule.queued.filter { item in !running.contains { $0.activity == item.activity } }
                let waitsForABusyWriter = writers > 0 && schedule.queued.count <= schedule.batchLimit
                #expect(
                    free.isEmpty || writers == limit || waitsForABusyWriter,
                    "a free command with no writer: \(free)"
                )
            }
            // Each activity's commands were first taken in the order they arrived.
            for activity in 0...4 {
                let order = taken.filter { $0.activity == activity }.map(\.number)
                #expect(order == order.sorted(), "activity \(activity) out of order: \(order)")
            }
        }
    }
}

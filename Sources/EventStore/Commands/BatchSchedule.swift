/// Something a batch holds: it names the keys (an activity, an idempotency key) that no other
/// item of a running batch may hold at the same time.
protocol Batchable {
    associatedtype Key: Hashable
    var batchKeys: [Key] { get }
}

/// Who runs what on the write path: the items queued, how many writers run, and the keys their
/// batches hold. A pure policy; `CommandQueue` keeps it under a lock.
///
/// - An item queued while no writer runs starts one at once: nothing waits for company.
/// - While one runs, items wait for its next batch, which is larger and so cheaper per item
///   than two small ones side by side; another writer starts (up to `writers`) only when more
///   items queue than one batch takes.
/// - A writer takes up to `batchLimit` items, in arrival order, skipping any whose keys a batch
///   holds (its own included): items with a key in common run one after another, in order.
///   While it makes its batch (before sending it), items that queued meanwhile join it.
/// - A writer that finds nothing to take stops, or stays ready a while (it still counts as
///   running, and takes what comes); the writer holding a skipped item's keys takes it when it
///   finishes, so nothing queued is ever left without a writer.
struct BatchSchedule<Item: Batchable> {
    let writers: Int
    let batchLimit: Int
    private(set) var queued: [Item] = []
    private(set) var running = 0
    private var held: Set<Item.Key> = []

    init(writers: Int, batchLimit: Int) {
        precondition(writers > 0 && batchLimit > 0, "a schedule needs a writer and room in a batch")
        self.writers = writers
        self.batchLimit = batchLimit
    }

    /// Queues `item`; returns whether a writer must start for it.
    mutating func enqueue(_ item: Item) -> Bool {
        queued.append(item)
        // With no writer running, no batch holds a key; a writer started for a full queue takes
        // whatever may go, and stops at once if nothing may.
        guard running < writers, running == 0 || queued.count > batchLimit else { return false }
        running += 1
        return true
    }

    /// A writer's next batch: frees the keys of the batch it `finished`, queues `retrying` ahead
    /// of everything, and takes what may go. When nothing may, returns `nil` and counts the
    /// writer out, or, unless it `mayStop`, returns no item and keeps it running (it stays
    /// ready, and commands that queue meanwhile start no other writer).
    mutating func next(after finished: [Item], retrying: [Item], mayStop: Bool = true) -> [Item]? {
        release(finished)
        queued.insert(contentsOf: retrying, at: 0)
        let batch = take(upTo: batchLimit)
        guard !batch.isEmpty else {
            guard mayStop else { return [] }
            running -= 1
            return nil
        }
        return batch
    }

    /// What joins a batch of `count` items that a writer is still making (it has not sent it):
    /// whatever queued since and may go, up to the batch's limit; nothing waits for it.
    mutating func joining(batchOf count: Int) -> [Item] {
        take(upTo: batchLimit - count)
    }

    /// Takes up to `limit` queued items, in arrival order, skipping any whose keys a batch holds.
    private mutating func take(upTo limit: Int) -> [Item] {
        var batch: [Item] = []
        var left: [Item] = []
        for (index, item) in queued.enumerated() {
            guard batch.count < limit else {
                left += queued[index...]
                break
            }
            let keys = item.batchKeys
            if keys.allSatisfy({ !held.contains($0) }) {
                held.formUnion(keys)
                batch.append(item)
            } else {
                left.append(item)
            }
        }
        queued = left
        return batch
    }

    /// Frees the keys of a batch that will not finish through `next` (it failed).
    mutating func release(_ batch: [Item]) {
        for item in batch { held.subtract(item.batchKeys) }
    }
}

import ActivityLifecycle
import EventStore

/// The shards of the log a delivery worker holds: how far it has read each, which it is giving
/// up (draining: nothing new is sent for them), and which it took over and has not yet read to
/// the log's end (catching up: nothing is sent for them yet, so that a push is never sent before
/// a newer one of its activity is known — another worker may have sent that one).
struct HeldShards {
    /// Every event of a shard up to its position has been absorbed.
    private(set) var readPositions: [Int: Int64] = [:]
    private var draining: Set<Int> = []
    private var catchingUp: Set<Int> = []

    var all: Set<Int> { Set(readPositions.keys) }

    /// Where to read the log from: the least-read shard being delivered.
    var readPosition: Int64? {
        readPositions.filter { !draining.contains($0.key) }.values.min()
    }

    func holds(_ stream: StreamID) -> Bool {
        readPositions[DeliveryShard.of(stream)] != nil
    }

    /// Whether pushes of `stream` go out: its shard is held and not being given up.
    func delivers(_ stream: StreamID) -> Bool {
        holds(stream) && !draining.contains(DeliveryShard.of(stream))
    }

    /// Whether pushes of `stream` may be sent: its shard is delivered and read to the log's end
    /// since it was taken over.
    func sends(_ stream: StreamID) -> Bool {
        delivers(stream) && !catchingUp.contains(DeliveryShard.of(stream))
    }

    /// The log was read to its end: every shard taken over has caught up.
    mutating func caughtUp() {
        catchingUp = []
    }

    /// Whether any shard is draining.
    var anyDraining: Bool { !draining.isEmpty }

    func isDraining(_ shard: Int) -> Bool {
        draining.contains(shard)
    }

    /// Takes shards over, each to be read after its cursor.
    mutating func adopt(_ cursors: [Int: Int64]) {
        readPositions.merge(cursors) { $1 }
        draining.subtract(cursors.keys)
        catchingUp.formUnion(cursors.keys)
    }

    mutating func drop(_ shards: Set<Int>) {
        for shard in shards { readPositions[shard] = nil }
        draining.subtract(shards)
        catchingUp.subtract(shards)
    }

    mutating func drain(_ shards: Set<Int>) {
        draining.formUnion(shards.filter { readPositions[$0] != nil })
    }

    /// Every shard being delivered has read the log up to `position`.
    mutating func read(upTo position: Int64) {
        for (shard, read) in readPositions where !draining.contains(shard) {
            readPositions[shard] = max(read, position)
        }
    }
}

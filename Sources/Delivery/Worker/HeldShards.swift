import ActivityLifecycle

/// The shards of the log a delivery worker holds: how far it has read each, and which it is
/// giving up (draining: nothing new is sent for them).
struct HeldShards {
    /// Every event of a shard up to its position has been absorbed.
    private(set) var readPositions: [Int: Int64] = [:]
    private var draining: Set<Int> = []

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

    func isDraining(_ shard: Int) -> Bool {
        draining.contains(shard)
    }

    /// Takes shards over, each to be read after its cursor.
    mutating func adopt(_ cursors: [Int: Int64]) {
        readPositions.merge(cursors) { $1 }
        draining.subtract(cursors.keys)
    }

    mutating func drop(_ shards: Set<Int>) {
        for shard in shards { readPositions[shard] = nil }
        draining.subtract(shards)
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

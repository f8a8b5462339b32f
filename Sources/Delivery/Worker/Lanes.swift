import ActivityLifecycle
import EventStore
import HeapModule

/// The activities' lanes, with each shard's earliest unsettled position kept as the lanes
/// change: the shards' cursors then cost a look per shard, not a pass over every lane (a
/// backlog has thousands, and the worker records every few milliseconds).
struct Lanes: Sequence {
    private var lanes: [StreamID: ActivityLane] = [:]
    /// Each lane's earliest unsettled position, as last seen.
    private var earliest: [StreamID: Int64] = [:]
    /// By shard: the lanes' earliest positions (how many lanes have each), and a heap of them
    /// whose top is always one of them (positions no lane has any more leave it when they reach
    /// the top).
    private var positions: [Int: [Int64: Int]] = [:]
    private var heaps: [Int: Heap<Int64>] = [:]

    var isEmpty: Bool { lanes.isEmpty }
    var keys: Dictionary<StreamID, ActivityLane>.Keys { lanes.keys }

    subscript(stream: StreamID) -> ActivityLane? {
        get { lanes[stream] }
        set {
            lanes[stream] = newValue
            track(stream)
        }
        _modify {
            yield &lanes[stream]
            track(stream)
        }
    }

    /// The stream's lane, a new one when it has none.
    subscript(stream: StreamID, default lane: @autoclosure () -> ActivityLane) -> ActivityLane {
        get { lanes[stream] ?? lane() }
        _modify {
            yield &lanes[stream, default: lane()]
            track(stream)
        }
    }

    /// The earliest unsettled position of each shard with lanes.
    var floors: [Int: Int64] {
        heaps.compactMapValues(\.min)
    }

    func makeIterator() -> Dictionary<StreamID, ActivityLane>.Iterator {
        lanes.makeIterator()
    }

    private mutating func track(_ stream: StreamID) {
        let new = lanes[stream]?.earliestPosition
        let old = earliest[stream]
        guard new != old else { return }
        let shard = DeliveryShard.of(stream)
        earliest[stream] = new
        if let old {
            positions[shard, default: [:]][old, default: 1] -= 1
            if positions[shard]?[old] == 0 { positions[shard]?[old] = nil }
        }
        if let new {
            positions[shard, default: [:]][new, default: 0] += 1
            heaps[shard, default: Heap()].insert(new)
        }
        while let top = heaps[shard]?.min, positions[shard]?[top] == nil {
            heaps[shard]?.removeMin()
        }
        if heaps[shard]?.isEmpty == true {
            heaps[shard] = nil
            positions[shard] = nil
        }
    }
}

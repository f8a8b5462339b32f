import ActivityLifecycle
import CanonicalJSON
import EventStore
import PropertyBased
import PropertyChecks
import Testing

@testable import Delivery

/// `Lanes` keeps each shard's earliest unsettled position as its lanes change: whatever is done
/// to them, it is what a pass over every lane finds.
@Suite("Lanes: each shard's earliest position kept as the lanes change")
struct LanesTests {
    static let streams = (0..<12).map {
        StreamID(app: AppID(rawValue: "game")!, activity: ActivityID(rawValue: "a\($0)")!)
    }

    static let operations = zip(Gen.int(in: 0...4), Gen.int(in: 0...11)).array(of: 1...120)

    @Test("the floors are the lanes' earliest positions by shard, after any offers, sends, answers and retries")
    func floorsFollowTheLanes() async {
        await checkProperty(count: 500, input: Self.operations) { operations in
            var lanes = Lanes()
            var position: Int64 = 0
            for (kind, index) in operations {
                let stream = Self.streams[index]
                position += 1
                switch kind {
                case 0: _ = lanes[stream, default: ActivityLane()].offer(Self.push(at: position))
                case 1: _ = lanes[stream]?.next(at: StartLaneTests.push(1).notBefore)
                case 2: lanes[stream]?.settle()
                case 3: _ = lanes[stream]?.retry(at: StartLaneTests.push(1).notBefore)
                default: if lanes[stream]?.isIdle ?? false { lanes[stream] = nil }
                }
                var expected: [Int: Int64] = [:]
                for (stream, lane) in lanes {
                    guard let earliest = lane.earliestPosition else { continue }
                    let shard = DeliveryShard.of(stream)
                    expected[shard] = min(expected[shard] ?? earliest, earliest)
                }
                #expect(lanes.floors == expected, "after \(operations)")
            }
        }
    }

    static func push(at position: Int64) -> ActivityLane.Push {
        let template = StartLaneTests.push(2)
        return ActivityLane.Push(
            position: position,
            version: Int(position),
            request: template.request,
            committedAt: template.committedAt,
            notBefore: template.notBefore
        )
    }
}

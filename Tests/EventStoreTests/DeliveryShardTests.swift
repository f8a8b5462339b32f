import ActivityLifecycle
import EventStore
import Testing

/// An activity's shard is stored with every cursor: it must never change between versions, or an
/// upgraded worker would look for an activity's pushes under another shard's cursor.
@Suite struct DeliveryShardTests {
    @Test("an activity's shard is FNV-1a of its app id, a zero byte and its activity id, modulo 16")
    func theShardOfAnActivityNeverChanges() {
        let known = [("demo", "b1", 3), ("demo", "b2", 6), ("demo", "b5", 15), ("shop", "order-7", 5), ("app", "x", 4)]
        for (app, activity, shard) in known {
            let stream = StreamID(app: AppID(rawValue: app)!, activity: ActivityID(rawValue: activity)!)
            #expect(DeliveryShard.of(stream) == shard, "\(app)/\(activity)")
        }
    }
}

public import ActivityLifecycle

/// The log's activities split into a fixed number of shards; a worker delivers the shards it
/// holds a lease on, so several processes share the work and each activity has one sender.
public enum DeliveryShard {
    /// As many as `delivery_shards` has rows (migration 0009).
    public static let count = 16

    /// The activity's shard: FNV-1a of its app and activity ids, the same in every process.
    public static func of(_ stream: StreamID) -> Int {
        of(stream.app, stream.activity.rawValue)
    }

    /// The device's shard, for its widget and control reloads: as an activity's, of its id.
    public static func of(_ app: AppID, device: DeviceID) -> Int {
        of(app, device.rawValue)
    }

    private static func of(_ app: AppID, _ key: String) -> Int {
        var hash: UInt32 = 2_166_136_261
        func mix(_ byte: UInt8) { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        for byte in app.rawValue.utf8 { mix(byte) }
        mix(0)
        for byte in key.utf8 { mix(byte) }
        return Int(hash % UInt32(count))
    }
}

import ActivityLifecycle

/// The streams whose lane has a push waiting (to go now, or at its retry time), with how many
/// of them each app has: the book scans them for pushes to send, and asks which apps' readings
/// must be fresh, on every turn of the worker's loop — without a pass over all of them.
struct WaitingStreams: Sequence {
    private var streams: Set<StreamID> = []
    /// Apps with streams waiting, and how many.
    private(set) var apps: [AppID: Int] = [:]

    var isEmpty: Bool { streams.isEmpty }

    mutating func insert(_ stream: StreamID) {
        if streams.insert(stream).inserted { apps[stream.app, default: 0] += 1 }
    }

    mutating func remove(_ stream: StreamID) {
        guard streams.remove(stream) != nil else { return }
        apps[stream.app, default: 1] -= 1
        if apps[stream.app] == 0 { apps[stream.app] = nil }
    }

    func makeIterator() -> Set<StreamID>.Iterator {
        streams.makeIterator()
    }
}

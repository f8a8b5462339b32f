import ActivityLifecycle
import CanonicalJSON
import EventLogTools
import EventStore
import TestSupport
import Testing

@Suite("Folding every stream of the log through the cursor")
struct StreamFoldTests {
    /// Each stream's id and versions, in the order folded and merged, and whether all its events
    /// were of that stream.
    typealias Folded = [(activity: String, versions: [Int], isOneStream: Bool)]

    @Test("every stream comes whole and in order, however batches cut the log and threads share the work")
    func wholeAndInOrder() async throws {
        let database = try await TestDatabase.makeMigrated()
        let app = AppID(rawValue: "com.example.delivery")!
        let now = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)
        func stream(_ id: String) -> StreamID { StreamID(app: app, activity: ActivityID(rawValue: id)!) }
        func withStore<T>(_ body: (EventStore) async throws -> T) async throws -> T {
            try await TestDatabase.withPool(database) { try await body(EventStore(pool: $0, lifecycle: Lifecycle())) }
        }
        // 400 streams of 1 to 5 events: 1,200 events, enough for a batch to be decoded and folded
        // on two threads at once, and streams that batches of 7 or 1,000 events cut in two.
        var expected: Folded = []
        try await withStore { store in
            try await store.createApp(
                app,
                AppSettings(bundleID: "com.example.delivery", maxOpen: 1_000),
                by: .commandLine
            )
            for index in 0..<400 {
                let id = "s-\(String(index + 1000).dropFirst())"
                try await store.execute(
                    .request(.init(activityType: "delivery", content: ActivityContent(contentState: .empty))),
                    on: stream(id),
                    at: now
                )
                for step in 0..<index % 5 {
                    let content = ActivityContent(contentState: JSONObject(["step": .number(JSONNumber(step))]))
                    try await store.execute(.update(.init(content: content, priority: .low)), on: stream(id), at: now)
                }
                expected.append((id, Array(1...1 + index % 5), true))
            }
        }
        for batchSize in [7, 1_000, 10_000] {
            let (folded, events, streams) = try await withStore { store in
                try await store.foldStreams(
                    from: Folded(),
                    batchSize: batchSize,
                    fold: { part, stream in
                        let id = stream[0].stream
                        part.append(
                            (id.activity.rawValue, stream.map(\.event.version), stream.allSatisfy { $0.stream == id })
                        )
                    },
                    merge: { $0 += $1 }
                )
            }
            #expect(events == 1_200)
            #expect(streams == 400)
            #expect(folded.map(\.activity) == expected.map(\.activity), "batch size \(batchSize)")
            #expect(folded.map(\.versions) == expected.map(\.versions), "batch size \(batchSize)")
            #expect(folded.allSatisfy { $0.isOneStream })
        }
    }
}

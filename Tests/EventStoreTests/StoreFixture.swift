import ActivityLifecycle
import CanonicalJSON
import EventStore
import Postgres
import TestSupport

/// A migrated database with an event store on it, and helpers to drive it.
struct StoreFixture {
    let database: String
    let app = AppID(rawValue: "com.example.delivery")!
    var now = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)

    static func make(settings: AppSettings = AppSettings(bundleID: "com.example.delivery")) async throws -> StoreFixture
    {
        let fixture = StoreFixture(database: try await TestDatabase.makeMigrated())
        try await fixture.withStore { try await $0.createApp(fixture.app, settings, by: .commandLine) }
        return fixture
    }

    /// A store with a pool of its own (another "process"), shut down after `body`.
    @discardableResult
    func withStore<T>(
        policy: LifecyclePolicy = .standard,
        connections: Int = 4,
        writers: Int? = nil,
        _ body: (EventStore) async throws -> T
    ) async throws -> T {
        try await TestDatabase.withPool(database, maximumConnections: connections) { pool in
            try await body(EventStore(pool: pool, lifecycle: Lifecycle(policy: policy), writers: writers))
        }
    }

    /// A listener on the channel the store's notifier uses (run it to start listening).
    func makeListener() throws -> AppendListener {
        try AppendListener(connectionString: database, logger: TestDatabase.logger)
    }

    func stream(_ id: String) -> StreamID {
        StreamID(app: app, activity: ActivityID(rawValue: id)!)
    }
}

func requestCommand(device: String? = nil, staleDate: Timestamp? = nil, size: Int = 1) -> Command {
    .request(
        .init(
            activityType: "delivery",
            attributes: JSONObject(["order": .string("A-1")]),
            content: ActivityContent(
                contentState: JSONObject(["step": .number(1), "pad": .string(String(repeating: "x", count: size))]),
                staleDate: staleDate
            ),
            deviceID: device.flatMap(DeviceID.init(rawValue:))
        )
    )
}

func updateCommand(_ step: Int, priority: Priority? = .low) -> Command {
    .update(
        .init(
            content: ActivityContent(contentState: JSONObject(["step": .number(JSONNumber(step))])),
            priority: priority
        )
    )
}

extension CommandResult {
    var accepted: StoredActivity? {
        if case .accepted(let activity, _) = outcome { activity } else { nil }
    }

    var appended: [StoredEvent] {
        if case .accepted(_, let events) = outcome { events } else { [] }
    }

    var rejection: Rejection? {
        if case .rejected(let rejection) = outcome { rejection } else { nil }
    }
}

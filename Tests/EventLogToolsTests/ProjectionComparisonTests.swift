import ActivityLifecycle
import EventLogTools
import EventStore
import Postgres
import TestSupport
import Testing

@Suite("Projections compared with the fold of the log (liveline verify --projections)")
struct ProjectionComparisonTests {
    typealias Fixture = AuditTimelineTests

    /// The known life, plus activities left by the deadline worker's path in each state.
    static func recordLog(_ store: EventStore) async throws {
        try await Fixture.recordKnownLife(store)
        for (index, staleAfter) in [60, 7200, 30].enumerated() {
            let stream = StreamID(app: Fixture.app, activity: ActivityID(rawValue: "live-\(index)")!)
            try await store.execute(
                .request(
                    .init(
                        activityType: "T",
                        content: ActivityContent(
                            contentState: .empty,
                            staleDate: Fixture.start + .seconds(Int64(staleAfter))
                        )
                    )
                ),
                on: stream,
                at: Fixture.start
            )
        }
        _ = try await store.applyDueDeadlines(at: Fixture.start + .seconds(300), limit: 100)
    }

    @Test("a log made by the command path and the deadline worker equals its live projection")
    func identical() async throws {
        try await Fixture.withStore { store, _ in
            try await Self.recordLog(store)
            for batchSize in [2, 10_000] {
                let differences = try await ProjectionComparison(store: store, batchSize: batchSize).differences()
                #expect(differences.isEmpty)
            }
        }
    }

    @Test("a tampered field, a deleted row and a row without events are each reported")
    func tampered() async throws {
        try await Fixture.withStore { store, pool in
            try await Self.recordLog(store)
            try await pool.withConnection { connection in
                try connection.execute("UPDATE activities SET state = 'active' WHERE activity_id = 'live-0'")
                try connection.execute("DELETE FROM activities WHERE activity_id = 'live-1'")
                try connection.execute(
                    """
                    INSERT INTO activities
                    SELECT (jsonb_populate_record(a, '{"activity_id": "ghost"}')).* FROM activities a
                    WHERE activity_id = 'live-2'
                    """
                )
            }
            let differences = try await ProjectionComparison(store: store).differences()
            let byActivity = Dictionary(grouping: differences) { $0.stream.activity.rawValue }
            #expect(byActivity["live-0"]?.map(\.field) == ["state"])
            #expect(byActivity["live-0"]?.first?.expected == "stale")
            #expect(byActivity["live-0"]?.first?.actual == "active")
            #expect(byActivity["live-1"]?.map(\.field) == ["projection"])
            #expect(byActivity["live-1"]?.first?.actual == "no row")
            #expect(byActivity["ghost"]?.map(\.field) == ["projection"])
            #expect(differences.count == 3)
        }
    }
}

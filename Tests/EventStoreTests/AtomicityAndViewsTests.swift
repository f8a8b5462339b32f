import ActivityLifecycle
import CanonicalJSON
import EventStore
import Postgres
import TestSupport
import Testing

@Suite("Atomic appends and the dashboard views")
struct AtomicityAndViewsTests {
    private func counts(_ database: String) async throws -> [Int] {
        try await TestDatabase.withPool(database) { pool in
            try await pool.withConnection { connection in
                let row = try connection.query(
                    """
                    SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM activities),
                           (SELECT open FROM app_open_counts), (SELECT sum(open) FROM global_open_stripes)::bigint,
                           (SELECT count(*) FROM idempotency_keys)
                    """
                ).single!
                return try (0..<5).map { try row.decode($0) }
            }
        }
    }

    @Test("an append that fails midway leaves no trace: no event without its projection, no count without either")
    func failedAppendLeavesNoTrace() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            try await store.execute(requestCommand(), on: fixture.stream("a"), at: fixture.now)
        }
        let before = try await counts(fixture.database)
        // The idempotency insert is the append's last step; a key already taken by another
        // activity makes it fail after the events, the projection and the counts were written.
        try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                try connection.execute(
                    """
                    INSERT INTO idempotency_keys (app_id, idempotency_key, request_sha256, activity_id, outcome)
                    VALUES ('com.example.delivery', 'taken', '\\x00', 'elsewhere', '{"accepted": {"from": 0, "to": 1}}')
                    """
                )
            }
        }
        await #expect(throws: (any Error).self) {
            try await fixture.withStore { store in
                try await store.execute(
                    requestCommand(),
                    on: fixture.stream("b"),
                    at: fixture.now,
                    idempotency: IdempotencyKey(key: "taken", requestDigest: [1])
                )
            }
        }
        var after = try await counts(fixture.database)
        after[4] -= 1  // the key inserted by hand
        #expect(after == before)
        #expect(try await fixture.withStore { try await $0.activity(fixture.stream("b")) } == nil)
    }

    @Test("every dashboard view answers, for the read-only dashboard role")
    func viewsAnswer() async throws {
        let fixture = try await StoreFixture.make()
        try await fixture.withStore { store in
            let stream = fixture.stream("v")
            try await store.execute(requestCommand(staleDate: fixture.now + .seconds(60)), on: stream, at: fixture.now)
            try await store.execute(
                .update(.init(content: ActivityContent(contentState: .empty), alert: Alert(title: "t", body: "b"))),
                on: stream,
                at: fixture.now + .seconds(120)
            )
            try await store.execute(requestCommand(size: 9_000), on: fixture.stream("w"), at: fixture.now)
        }
        let answers: [String: Int] = try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withTransaction { connection in
                try connection.execute("SET LOCAL ROLE liveline_dashboard")
                var answers: [String: Int] = [:]
                answers["open_activities"] = try connection.query("SELECT activities FROM open_activities").single?
                    .decode(0)
                answers["events_per_minute"] = try connection.query("SELECT sum(events)::bigint FROM events_per_minute")
                    .single?.decode(0)
                answers["cap_utilisation"] = try connection.query("SELECT count(*) FROM cap_utilisation").single?
                    .decode(0)
                answers["rejections_per_minute"] = try connection.query(
                    "SELECT sum(rejections)::bigint FROM rejections_per_minute"
                ).single?.decode(0)
                answers["alerts_per_minute"] = try connection.query("SELECT sum(alerts)::bigint FROM alerts_per_minute")
                    .single?.decode(0)
                answers["state_intervals"] = try connection.query("SELECT count(*) FROM state_intervals").single?
                    .decode(0)
                answers["time_in_state"] = try connection.query("SELECT count(*) FROM time_in_state").single?.decode(0)
                return answers
            }
        }
        #expect(answers["open_activities"] == 1)
        // requested, became_stale (caught up by the update), updated
        #expect(answers["events_per_minute"] == 3)
        #expect(answers["cap_utilisation"] == 2)
        #expect(answers["rejections_per_minute"] == 1)
        #expect(answers["alerts_per_minute"] == 1)
        // active, stale, active again
        #expect(answers["state_intervals"] == 3)
        #expect(answers["time_in_state"] == 2)
    }
}

import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation
import Postgres
import TestSupport
import Testing

@Suite("The Grafana dashboard of docker-compose.yml")
struct DashboardTests {
    static let dashboard = URL(filePath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "deploy/grafana/dashboards/liveline.json")

    /// Every panel's SQL, with Grafana's time macro as PostgreSQL.
    static func panelQueries() throws -> [(title: String, sql: String)] {
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: dashboard)) as? [String: Any]
        let panels = json?["panels"] as? [[String: Any]] ?? []
        return panels.flatMap { panel in
            (panel["targets"] as? [[String: Any]] ?? []).compactMap { target in
                guard let title = panel["title"] as? String, let sql = target["rawSql"] as? String else { return nil }
                let expanded = sql.replacing(/\$__timeFilter\((\w+)\)/) {
                    "\($0.output.1) > now() - interval '6 hours'"
                }
                return (title, expanded)
            }
        }
    }

    @Test("has a panel for each view the spec asks for, and reads only documented views")
    func panels() throws {
        let queries = try Self.panelQueries()
        #expect(queries.count == 14)
        let views = [
            "open_activities", "cap_utilisation", "events_per_minute", "rejections_per_minute",
            "alerts_per_minute", "time_in_state", "deliveries_per_minute", "delivery_failures_by_reason",
            "delivery_latency_per_minute", "invalidated_tokens_per_minute", "log_partition_sizes",
            "reload_deliveries_per_minute", "remote_start_verdicts_per_minute",
        ]
        for view in views {
            #expect(queries.contains { $0.sql.contains("FROM \(view)") }, "no panel reads \(view)")
        }
        for query in queries {
            // Table sources follow an upper-case FROM (`extract(epoch from …)` is written in lower case).
            let sources = query.sql.matches(of: /FROM (\w+)/).map { String($0.output.1) }
            #expect(!sources.isEmpty && sources.allSatisfy(views.contains), "\(query.title) reads \(sources)")
        }
    }

    @Test("every panel's query runs as the read-only dashboard role on a log with activity")
    func queriesRunAsDashboardRole() async throws {
        let fixture = try await StoreFixture.make(settings: AppSettings(bundleID: "b", maxOpen: 1))
        try await fixture.withStore { store in
            let now = Timestamp.now()
            try await store.execute(requestCommand(), on: fixture.stream("a"), at: now)
            try await store.execute(
                .update(.init(content: ActivityContent(contentState: .empty), alert: Alert(title: "t", body: "b"))),
                on: fixture.stream("a"),
                at: now + .seconds(1)
            )
            try await store.execute(requestCommand(), on: fixture.stream("b"), at: now + .seconds(2))
            try await store.execute(.end(.init(dismissal: .immediate)), on: fixture.stream("a"), at: now + .seconds(3))
        }
        let queries = try Self.panelQueries()
        try await TestDatabase.withPool(fixture.database) { pool in
            try await pool.withConnection { connection in
                for query in queries {
                    do {
                        try connection.executeScript("SET ROLE liveline_dashboard; \(query.sql); RESET ROLE")
                    } catch {
                        Issue.record("\(query.title): \(String(reflecting: error))")
                        try connection.executeScript("RESET ROLE")
                    }
                }
            }
        }
    }
}

import ActivityLifecycle
import CanonicalJSON
import Foundation
import Postgres
import TestSupport
import Testing

@testable import EventStore

@Suite("The seam between Swift and SQL: codes, constraints and parameters named once, and agreeing")
struct SQLNamesTests {
    @Test("the codes named in Swift are exactly the LLnnn codes the stored functions raise")
    func refusalCodes() throws {
        let raised = try Regex(#"(?:ERRCODE\s*=|SQLSTATE|refusal\s*:=)\s*'(LL\d{3})'"#)
        var codes: Set<String> = []
        for function in try FunctionDefinition.load(from: TestDatabase.functionsDirectory) {
            for match in function.sql.matches(of: raised) {
                codes.insert(String(match.output[1].substring ?? ""))
            }
        }
        #expect(codes == Set(LivelineSQLState.allCases.map(\.rawValue)))
    }

    @Test("a refusal's detail is read into its case; codes that are no refusal are not taken for one")
    func refusalsParsed() {
        #expect(
            AppendRefusal(code: "LL001", detail: #"{"limit": 5, "count": 5}"#) == .appCapReached(limit: 5, count: 5)
        )
        #expect(
            AppendRefusal(code: "LL002", detail: #"{"limit":9,"count":9}"#) == .globalCapReached(limit: 9, count: 9)
        )
        #expect(
            AppendRefusal(code: "LL003", detail: #"{"limit":2,"count":2}"#) == .deviceCapReached(limit: 2, count: 2)
        )
        #expect(AppendRefusal(code: "LL409", detail: #"{"actual": 7}"#) == .versionConflict(actual: 7))
        #expect(AppendRefusal(code: "LL409", detail: #"{"actual": null}"#) == .versionConflict(actual: nil))
        // A batch decides its refusals; a unique violation fails it whole.
        #expect(AppendRefusal(code: "23505", detail: nil) == nil)
        #expect(AppendRefusal(code: "LL412", detail: nil) == nil)
        #expect(AppendRefusal(code: "40P01", detail: nil) == nil)
    }

    @Test("the constraints named in Swift exist in the schema")
    func constraints() async throws {
        try await TestDatabase.withPool(try await TestDatabase.makeMigrated()) { pool in
            let names: [String] = try await pool.withConnection { connection in
                try connection.query("SELECT conname::text FROM pg_constraint").map { try $0.decode(0) }
            }
            for constraint in ConstraintName.allCases {
                #expect(names.contains(constraint.rawValue), "\(constraint.rawValue)")
            }
        }
    }

    @Test(
        "the append's arguments are the parameters of the functions, in their order (the trace contexts' only when sampled)"
    )
    func arguments() async throws {
        try await TestDatabase.withPool(try await TestDatabase.makeMigrated()) { pool in
            func parameters(_ function: String) async throws -> [String] {
                try await pool.withConnection { connection in
                    try connection.query(
                        """
                        SELECT array_to_string(proargnames[1:pronargs], ',') FROM pg_proc
                        WHERE proname = \(function) AND pronamespace = 'public'::regnamespace
                        """
                    ).single.map { try $0.decode(0, as: String.self).split(separator: ",").map(String.init) } ?? []
                }
            }
            let batch = try await parameters("liveline_append_batch")
            let lone = try await parameters("liveline_append")
            let rules = try await parameters("liveline_rules_unchanged")
            let traced = try Self.opening(
                trace: TraceContext(
                    traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                    tracestate: nil
                )
            )
            #expect(CommandQueries.arguments([], recording: []).names == batch.dropLast(2))
            #expect(CommandQueries.arguments([traced], recording: []).names == batch)
            #expect(CommandQueries.arguments(try Self.opening()).names == lone.dropLast(2))
            #expect(CommandQueries.arguments(traced).names == lone)
            #expect(CommandQueries.RulesCheck().arguments.names == rules)
        }
    }

    /// An opening's append, as a request decides it.
    private static func opening(trace: TraceContext? = nil) throws -> ActivityAppend {
        let lifecycle = Lifecycle()
        let context = DecisionContext(
            app: AppRules(maxOpen: 5, maxOpenPerDevice: nil, priorityBudgetPerHour: 10),
            globalMaxOpen: 100,
            open: OpenCounts(app: 0, global: 0, device: 0)
        )
        let now = Timestamp(microsecondsSince1970: 1_800_000_000_000_000)
        let events = try lifecycle.decide(requestCommand(), for: nil, at: now, context: context)
        let activity = try #require(try events.reduce(nil) { try lifecycle.evolve($0, with: $1) })
        let stream = StreamID(app: AppID(rawValue: "com.example.names")!, activity: ActivityID(rawValue: "a")!)
        return ActivityAppend(events, on: stream, from: nil, to: activity, lifecycle, idempotency: nil, trace: trace)
    }
}

import CanonicalJSON

/// The state × command table of the lifecycle, computed by running `decide` on a
/// representative activity in each state, so the published table is the code's own behaviour.
public struct TransitionTable: Sendable {
    /// What a command does to an activity in one state.
    public enum Outcome: Hashable, Sendable {
        /// Events appended; the activity ends up in `state` (possibly the same one).
        case applied(events: [EventType], state: ActivityState)
        /// Accepted, nothing appended.
        case noOp
        /// Refused with this code.
        case rejected(code: String)
    }

    /// The columns: before the activity exists, then each state.
    public enum Column: Hashable, Sendable, CaseIterable {
        case none
        case state(ActivityState)

        public static let allCases: [Column] = [.none] + ActivityState.allCases.map(Column.state)

        public var title: String {
            switch self {
            case .none: "(none)"
            case .state(let state): state.rawValue
            }
        }
    }

    public struct Row: Sendable {
        public let command: Command
        /// The command's name, with what sets this row apart.
        public let label: String
        public let outcomes: [Column: Outcome]
    }

    public let rows: [Row]

    /// A fixed reference time, so the table does not depend on when it is computed.
    static let reference = Timestamp(microsecondsSince1970: 1_767_225_600_000_000)  // 2026-01-01T00:00:00Z

    public init(lifecycle: Lifecycle) {
        let r = Self.reference
        let lifetime = lifecycle.policy.activeLifetime
        let context = DecisionContext(
            app: AppRules(defaultsOf: lifecycle.policy),
            globalMaxOpen: lifecycle.policy.defaultGlobalMaxOpen,
            open: OpenCounts(app: 0, global: 0)
        )
        func run(_ steps: [(Command, Timestamp)]) -> Activity? {
            var activity: Activity?
            for (command, time) in steps {
                let events = try! lifecycle.decide(command, for: activity, at: time, context: context)
                activity = try! events.reduce(activity) { try lifecycle.evolve($0, with: $1) }
            }
            return activity
        }
        func content(step: Double, staleDate: Timestamp? = nil) -> ActivityContent {
            ActivityContent(contentState: JSONObject(["step": .number(JSONNumber(step))]), staleDate: staleDate)
        }
        func request(staleDate: Timestamp? = nil, startDate: Timestamp? = nil) -> Command {
            .request(
                .init(activityType: "delivery", content: content(step: 1, staleDate: staleDate), startDate: startDate)
            )
        }
        let startDate = r + lifetime / 8
        let staleDate = r + lifetime / 4
        // One activity per state. The active one has a stale date coming, except for the
        // lifetime row, where a stale date passing first would show up in the cell.
        func fixtures(activeStaleDate: Timestamp?) -> [Column: Activity?] {
            [
                .none: nil,
                .state(.pending): run([(request(startDate: startDate), r - .seconds(60))]),
                .state(.active): run([(request(staleDate: activeStaleDate), r - .seconds(60))]),
                .state(.stale): run([
                    (request(staleDate: r - .seconds(30)), r - .seconds(60)), (.markStale, r - .seconds(30)),
                ]),
                .state(.ended): run([
                    (request(), r - .seconds(120)), (.end(.init(dismissal: .default)), r - .seconds(60)),
                ]),
                .state(.dismissed): run([
                    (request(), r - .seconds(120)), (.end(.init(dismissal: .immediate)), r - .seconds(60)),
                ]),
            ]
        }
        let lifetimeEnd = Command.end(.init(dismissal: .default, reason: .lifetimeExceeded))
        // App and device commands at the reference time, when nothing is due; a time-driven
        // command when its own deadline is due, on the activities that have one.
        let commands: [Command] = [
            request(), request(startDate: r + lifetime), .start, .update(.init(content: content(step: 2))), .markStale,
            .end(.init(dismissal: .default)), lifetimeEnd, .dismiss(.deadline), .dismiss(.userRemoved),
            .registerPushToken("token-2"),
            .flagUnconfirmedStart(
                UnconfirmedStart(
                    pushToStartToken: "start-token",
                    acceptedAt: r - lifecycle.policy.startConfirmationWindow,
                    tokenDueBy: r,
                    unconfirmedInARow: 1,
                    tokenSuspect: false
                )
            ),
        ]
        rows = commands.map { command in
            let fixtures = fixtures(activeStaleDate: command == lifetimeEnd ? nil : staleDate)
            var outcomes: [Column: Outcome] = [:]
            for column in Column.allCases {
                let activity = fixtures[column] ?? nil
                let time =
                    activity.flatMap { command.cause == .system ? lifecycle.dueTime(of: command, for: $0) : nil } ?? r
                let events: [ActivityEvent]
                do throws(Rejection) {
                    events = try lifecycle.decide(command, for: activity, at: time, context: context)
                } catch {
                    outcomes[column] = .rejected(code: error.code)
                    continue
                }
                let after = try! events.reduce(activity) { try lifecycle.evolve($0, with: $1) }
                outcomes[column] = events.isEmpty ? .noOp : .applied(events: events.map(\.type), state: after!.state)
            }
            let label: String =
                switch command {
                case .request(let request) where request.startDate != nil: "request (future start date)"
                default: command.name
                }
            return Row(command: command, label: label, outcomes: outcomes)
        }
    }
}

extension TransitionTable {
    /// The table as Markdown, followed by a Mermaid state diagram of its transitions.
    public var markdown: String {
        var lines = [
            "| command (cause) | " + Column.allCases.map(\.title).joined(separator: " | ") + " |",
            "|---|" + String(repeating: "---|", count: Column.allCases.count),
        ]
        for row in rows {
            let cells = Column.allCases.map { column in
                switch row.outcomes[column]! {
                case .applied(let events, let state):
                    "→ \(state.rawValue) (`"
                        + events.map { $0.rawValue.replacingPrefix("activity.", with: "") }.joined(separator: "`, `")
                        + "`)"
                case .noOp: "no-op"
                case .rejected(let code): "reject `\(code)`"
                }
            }
            lines.append("| \(row.label) (\(row.command.cause.rawValue)) | " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n") + "\n\n" + mermaid
    }

    /// A Mermaid state diagram: one edge per (state, command) that changes the state.
    public var mermaid: String {
        var lines = ["```mermaid", "stateDiagram-v2"]
        var edges: [String: [String]] = [:]
        var order: [String] = []
        for row in rows {
            for column in Column.allCases {
                guard case .applied(_, let after) = row.outcomes[column]! else { continue }
                let before: String
                switch column {
                case .none: before = "[*]"
                case .state(let state):
                    guard state != after else { continue }
                    before = state.rawValue
                }
                let key = "\(before) --> \(after.rawValue)"
                if edges[key] == nil { order.append(key) }
                edges[key, default: []].append(row.label)
            }
        }
        for key in order {
            lines.append("    \(key): " + edges[key]!.joined(separator: ", "))
        }
        lines.append("    dismissed --> [*]")
        lines.append("```")
        return lines.joined(separator: "\n")
    }
}

extension String {
    fileprivate func replacingPrefix(_ prefix: String, with replacement: String) -> String {
        hasPrefix(prefix) ? replacement + dropFirst(prefix.count) : self
    }
}

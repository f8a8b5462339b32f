import CanonicalJSON
import Postgres

/// The SQLSTATEs Liveline's stored functions raise, named once: `SQLNamesTests` compares them
/// with the codes in `migrations/functions/`.
enum LivelineSQLState: String, CaseIterable {
    /// `liveline_admit_opening`: the app's cap is reached (detail: `limit`, `count`).
    case appCapReached = "LL001"
    /// `liveline_admit_opening`: the global cap is reached (detail: `limit`, `count`).
    case globalCapReached = "LL002"
    /// `liveline_admit_opening`: the device's cap is reached (detail: `limit`, `count`).
    case deviceCapReached = "LL003"
    /// Raised and caught inside `liveline_batch_admit_together` (a step of `liveline_append_batch`)
    /// to give back what it took when a batch's openings do not all fit; it never leaves the
    /// function.
    case openingsDoNotFitTogether = "LL010"
    /// An append: the activity is not at the expected version (detail: `actual`, null when it
    /// does not exist), or an opening's activity exists.
    case versionConflict = "LL409"
    /// `liveline_rules_unchanged`: an app's rules changed since a batch was decided under them.
    case rulesChanged = "LL412"

    var sqlState: SQLState { SQLState(rawValue: rawValue) }
}

/// The constraints whose violations the store tells apart, named once: `SQLNamesTests` checks
/// that the schema has them.
enum ConstraintName: String, CaseIterable {
    /// A concurrent command with the same idempotency key committed first.
    case idempotencyKey = "idempotency_keys_pkey"
    /// A concurrent opening created the activity first.
    case activity = "activities_pkey"
}

/// Why the append refused one command: read from the code and JSON detail it returned for it.
enum AppendRefusal: Error, Equatable {
    case appCapReached(limit: Int, count: Int)
    case globalCapReached(limit: Int, count: Int)
    case deviceCapReached(limit: Int, count: Int)
    /// The activity's version when the expected one was not found; `nil` when it does not exist.
    case versionConflict(actual: Int?)

    /// The refusal an append returned for one command: its code and detail; `nil` for a code
    /// that is no refusal.
    init?(code: String, detail: String?) {
        let fields = detail.flatMap { try? JSONParser.parseObject(Array($0.utf8)).members } ?? [:]
        func integer(_ name: String) -> Int? {
            guard case .number(let number) = fields[name] else { return nil }
            return number.integer.flatMap(Int.init(exactly:))
        }
        switch code {
        case LivelineSQLState.appCapReached.rawValue:
            self = .appCapReached(limit: integer("limit") ?? 0, count: integer("count") ?? 0)
        case LivelineSQLState.globalCapReached.rawValue:
            self = .globalCapReached(limit: integer("limit") ?? 0, count: integer("count") ?? 0)
        case LivelineSQLState.deviceCapReached.rawValue:
            self = .deviceCapReached(limit: integer("limit") ?? 0, count: integer("count") ?? 0)
        case LivelineSQLState.versionConflict.rawValue:
            self = .versionConflict(actual: integer("actual"))
        default:
            return nil
        }
    }
}

extension PostgresError {
    /// A unique violation of an idempotency key: a concurrent command with the same key committed first.
    var isIdempotencyKeyTaken: Bool {
        isUniqueViolation && constraint == ConstraintName.idempotencyKey.rawValue
    }

    /// A unique violation of an idempotency key or an activity: a concurrent command created it first.
    var isTakenMeanwhile: Bool {
        isIdempotencyKeyTaken || (isUniqueViolation && constraint == ConstraintName.activity.rawValue)
    }

    /// The rules of an app that commands were decided under changed since they were read.
    var isRulesChanged: Bool {
        sqlState == LivelineSQLState.rulesChanged.sqlState
    }

    /// A batch was decided on what another process changed since: a row it creates was created
    /// meanwhile, or the rules of an app.
    var isStaleDecision: Bool {
        isTakenMeanwhile || isRulesChanged
    }
}

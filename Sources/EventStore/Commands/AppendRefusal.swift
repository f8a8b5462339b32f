import Foundation
import Postgres

/// Why `liveline_append` refused one command of a batch: the SQLSTATE it raised (a cap reached,
/// a version conflict, an idempotency key taken meanwhile) and what its JSON detail says.
struct AppendRefusal: Error {
    let sqlState: String
    private(set) var limit = 0
    private(set) var count = 0
    /// The activity's version when the expected one was not found; `nil` when it does not exist.
    private(set) var actual: Int?

    init(sqlState: String, detail: String?) {
        self.sqlState = sqlState
        guard let detail,
            let value = try? JSONDecoder().decode([String: Int?].self, from: Data(detail.utf8))
        else { return }
        limit = (value["limit"] ?? nil) ?? 0
        count = (value["count"] ?? nil) ?? 0
        actual = value["actual"] ?? nil
    }
}

extension AppendRefusal {
    /// The refusal `liveline_append` raised, when `error` is one (a cap, a version conflict, an
    /// idempotency key taken meanwhile); `nil` for any other failure.
    init?(_ error: PostgresError) {
        guard let state = error.sqlState?.rawValue,
            ["LL001", "LL002", "LL003", "LL409"].contains(state) || error.isIdempotencyKeyTaken
        else { return nil }
        self.init(sqlState: state, detail: error.detail)
    }
}

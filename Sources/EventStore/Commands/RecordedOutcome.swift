import ActivityLifecycle
import CanonicalJSON
import Postgres

/// What an idempotency record keeps of a command's outcome: the versions it appended, or its
/// rejection. A retry is answered from the log itself.
enum RecordedOutcome: Hashable {
    /// The command took the stream from `from` to `to` (equal for a no-op).
    case accepted(from: Int, to: Int)
    case rejected(Rejection)

    var json: JSONB {
        let value: JSONValue =
            switch self {
            case .accepted(let from, let to):
                .object(["accepted": .object(["from": .number(JSONNumber(from)), "to": .number(JSONNumber(to))])])
            case .rejected(let rejection):
                .object(["rejected": .object(["code": .string(rejection.code), "details": .object(rejection.details)])])
            }
        return JSONB(utf8: value.canonicalJSON)
    }

    init?(json: JSONB) {
        guard case .object(let object)? = try? JSONParser.parse(json.utf8) else { return nil }
        if case .object(let accepted) = object["accepted"], case .number(let from) = accepted["from"],
            case .number(let to) = accepted["to"], let from = from.integer.flatMap(Int.init(exactly:)),
            let to = to.integer.flatMap(Int.init(exactly:))
        {
            self = .accepted(from: from, to: to)
        } else if case .object(let rejected) = object["rejected"], case .string(let code) = rejected["code"],
            case .object(let details) = rejected["details"], let rejection = Rejection(code: code, details: details)
        {
            self = .rejected(rejection)
        } else {
            return nil
        }
    }
}

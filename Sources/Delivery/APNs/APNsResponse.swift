public import CanonicalJSON

/// What became of one request to APNs.
public enum APNsResponse: Hashable, Sendable {
    /// APNs answered: its status, and for an error its `reason` (and, on 410, when the token
    /// stopped being valid).
    case answered(status: Int, reason: String?, tokenInvalidSince: Timestamp?, apnsID: String?)
    /// No answer: a connection or TLS failure, the request's deadline, or a stream refused by
    /// GOAWAY. What happened, for the log.
    case unanswered(String)

    /// Apple's status and reason, read from an answer (a push's `apns-id`, a broadcast's
    /// `apns-request-id`).
    init(_ result: Result<APNsAnswer, APNsUnanswered>) {
        switch result {
        case .failure(let unanswered):
            self = .unanswered(unanswered.why)
        case .success(let answer):
            let apnsID = answer.header("apns-id") ?? answer.header("apns-request-id")
            guard answer.status != 200 else {
                self = .answered(status: 200, reason: nil, tokenInvalidSince: nil, apnsID: apnsID)
                return
            }
            var since: Timestamp? = nil
            if case .object(let members)? = try? JSONParser.parse(answer.body),
                case .number(let milliseconds)? = members["timestamp"], let milliseconds = milliseconds.integer
            {
                since = Timestamp(microsecondsSince1970: milliseconds * 1000)
            }
            self = .answered(status: answer.status, reason: answer.reason, tokenInvalidSince: since, apnsID: apnsID)
        }
    }
}

extension APNsAnswer {
    /// Apple's `reason` for an error, from the JSON body.
    var reason: String? {
        guard case .object(let members)? = try? JSONParser.parse(body), case .string(let reason)? = members["reason"]
        else { return nil }
        return reason
    }
}

extension APNsResponse {
    /// APNs' status, when it answered.
    var status: Int? {
        guard case .answered(let status, _, _, _) = self else { return nil }
        return status
    }

    /// APNs' reason for an error, or what kept the answer from coming.
    var reason: String? {
        switch self {
        case .answered(_, let reason, _, _): reason
        case .unanswered(let failure): failure
        }
    }
}

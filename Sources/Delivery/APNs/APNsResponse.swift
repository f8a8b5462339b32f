public import CanonicalJSON

/// What became of one request to APNs.
public enum APNsResponse: Hashable, Sendable {
    /// APNs answered: its status, and for an error its `reason` (and, on 410, when the token
    /// stopped being valid).
    case answered(status: Int, reason: String?, tokenInvalidSince: Timestamp?, apnsID: String?)
    /// No answer: a connection or TLS failure, the request's deadline, or a stream refused by
    /// GOAWAY. What happened, for the log.
    case unanswered(String)

    /// Apple's status and reason, read from a response.
    static func answer(status: Int, body: [UInt8], apnsID: String?) -> APNsResponse {
        guard status != 200 else { return .answered(status: 200, reason: nil, tokenInvalidSince: nil, apnsID: apnsID) }
        var reason: String? = nil
        var since: Timestamp? = nil
        if case .object(let members)? = try? JSONParser.parse(body) {
            if case .string(let text)? = members["reason"] { reason = text }
            if case .number(let milliseconds)? = members["timestamp"], let milliseconds = milliseconds.integer {
                since = Timestamp(microsecondsSince1970: milliseconds * 1000)
            }
        }
        return .answered(status: status, reason: reason, tokenInvalidSince: since, apnsID: apnsID)
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

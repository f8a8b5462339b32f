package import CanonicalJSON
import Crypto
package import EventStore
import Foundation

/// The provider token of one set of credentials: an ES256 JWT (`kid`, `iss`, `iat`) minted when
/// first needed and reused until it is `renewalAge` old. Apple wants a new one at least hourly
/// and refuses more than one per 20 minutes on a connection; renewing at 50 minutes does both
/// for every connection that uses it.
package struct ProviderToken: Sendable {
    /// When a token is replaced (Apple: between 20 and 60 minutes).
    static let renewalAge: Duration = .seconds(50 * 60)
    /// A token younger than this is never replaced, even when APNs calls it expired.
    static let minimumAge: Duration = .seconds(20 * 60)

    package let jwt: String
    let issuedAt: Timestamp

    /// A new token signed by `credentials` at `now` (whole seconds, as `iat` is).
    package init(credentials: APNsCredentials, now: Timestamp) throws {
        let seconds = now.epochSeconds
        issuedAt = Timestamp(microsecondsSince1970: seconds * 1_000_000)
        var header = JSONObjectWriter()
        header.add("alg", .string("ES256"))
        header.add("kid", .string(credentials.keyID))
        var claims = JSONObjectWriter()
        claims.add("iss", .string(credentials.teamID))
        claims.add("iat", .number(JSONNumber(seconds)))
        let signingInput = Self.base64URL(header.json) + "." + Self.base64URL(claims.json)
        let signature = try credentials.privateKey.signature(for: Array(signingInput.utf8))
        jwt = signingInput + "." + Self.base64URL(Array(signature.rawRepresentation))
    }

    /// Whether the token should be replaced at `now`.
    func isDue(at now: Timestamp) -> Bool {
        now - issuedAt >= Self.renewalAge
    }

    /// Whether APNs' `ExpiredProviderToken` may be answered with a new token at `now` without
    /// minting twice in 20 minutes.
    func mayBeReplaced(at now: Timestamp) -> Bool {
        now - issuedAt >= Self.minimumAge
    }

    private static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

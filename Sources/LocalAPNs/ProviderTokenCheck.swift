import CanonicalJSON
import Crypto
import Foundation

/// Checks a provider token as APNs does: an ES256 JWT whose `kid` names a registered key, whose
/// `iss` is that key's team, whose signature that key made, and whose `iat` is under an hour old.
struct ProviderTokenCheck {
    struct Claims: Equatable {
        let keyID: String
        let teamID: String
        let issuedAt: Int64
    }

    enum Failure: Error, Equatable {
        case missing
        case invalid
        case expired
    }

    /// The token's claims, once its signature checks out with the key `kid` names.
    static func verify(
        authorization: String?,
        now: Int64,
        keys: (String) -> LocalAPNs.RegisteredKey?
    ) -> Result<(Claims, token: String), Failure> {
        guard let authorization, !authorization.isEmpty else { return .failure(.missing) }
        let prefix = "bearer "
        guard authorization.count > prefix.count, authorization.lowercased().hasPrefix(prefix) else {
            return .failure(.invalid)
        }
        let token = String(authorization.dropFirst(prefix.count))
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            case .object(let header)? = decodeJSON(parts[0]),
            case .object(let claims)? = decodeJSON(parts[1]),
            header["alg"] == .string("ES256"),
            case .string(let keyID)? = header["kid"],
            case .string(let teamID)? = claims["iss"],
            case .number(let issuedAt)? = claims["iat"], let issuedAt = issuedAt.integer,
            let signatureBytes = base64URLDecoded(parts[2]),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            let key = keys(keyID), key.teamID == teamID,
            key.publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8)),
            issuedAt <= now + 60
        else { return .failure(.invalid) }
        guard now - issuedAt <= 3600 else { return .failure(.expired) }
        return .success((Claims(keyID: keyID, teamID: teamID, issuedAt: issuedAt), token))
    }

    private static func decodeJSON(_ part: Substring) -> JSONValue? {
        base64URLDecoded(part).flatMap { try? JSONParser.parse($0) }
    }

    private static func base64URLDecoded(_ part: Substring) -> [UInt8]? {
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        return Data(base64Encoded: text).map(Array.init)
    }
}

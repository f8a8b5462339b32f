import ActivityLifecycle
import CanonicalJSON
import Crypto
import Foundation

/// `Idempotency-Key`: its syntax, and the digest binding it to one request.
enum IdempotencyKeys {
    static func validated(_ key: String) throws -> String {
        guard key.isVisibleASCII(lengths: 1...255) else {
            throw Problem.invalidRequest(
                "Idempotency-Key must be 1–255 visible ASCII characters, such as a UUID.",
                field: "Idempotency-Key"
            )
        }
        return key
    }

    /// SHA-256 of the operation, the activity (if it names one), the precondition and the body in canonical JSON
    /// (compact, keys sorted, one spelling per number and string): a retry that writes the same
    /// body otherwise is the same request.
    static func digest(
        _ operation: String,
        _ activity: ActivityID?,
        _ ifMatch: String?,
        canonicalBody: [UInt8]
    ) -> [UInt8] {
        var hash = SHA256()
        hash.update(data: Array("\(operation)\n\(activity.map { "\($0)" } ?? "")\n\(ifMatch ?? "")\n".utf8))
        hash.update(data: canonicalBody)
        return Array(hash.finalize())
    }

    /// The digest of a body the generated code decoded: its encoding, in canonical JSON.
    static func digest(
        _ operation: String,
        _ activity: ActivityID?,
        _ ifMatch: String?,
        body: some Encodable
    ) throws -> [UInt8] {
        let canonical = try JSONParser.parse(Array(try JSONEncoder().encode(body))).canonicalJSON
        return digest(operation, activity, ifMatch, canonicalBody: canonical)
    }
}

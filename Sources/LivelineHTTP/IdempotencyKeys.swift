import ActivityLifecycle
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

    /// SHA-256 of the operation, the activity, the precondition and the body in canonical JSON.
    static func digest(
        _ operation: String,
        _ activity: ActivityID,
        _ ifMatch: String?,
        _ body: some Encodable
    ) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var hash = SHA256()
        hash.update(data: Array("\(operation)\n\(activity)\n\(ifMatch ?? "")\n".utf8))
        hash.update(data: try encoder.encode(body))
        return Array(hash.finalize())
    }
}

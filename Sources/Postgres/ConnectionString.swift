internal import CLibPQ

/// Checks of a connection string before any network traffic.
enum ConnectionString {
    /// Throws `invalidConnectionString` with libpq's explanation when the string cannot be parsed.
    static func validate(_ string: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(string, &message) else {
            let reason = message.map { String(cString: $0).trimmingTrailingWhitespace() } ?? "cannot be parsed"
            PQfreemem(message)
            throw PostgresError(
                code: .invalidConnectionString,
                message: "invalid database connection string: \(reason)"
            )
        }
        PQconninfoFree(options)
    }
}

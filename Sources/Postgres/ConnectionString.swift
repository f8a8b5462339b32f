internal import CLibPQ
import Foundation

/// Checks and edits of connection strings (URLs or conninfo), without any network traffic.
public enum ConnectionString {
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

extension ConnectionString {
    /// The same connection parameters, with another database: for tools that create databases
    /// and then connect to them (tests, `liveline dev`).
    ///
    /// - Returns: a conninfo string (`key='value' …`).
    public static func replacingDatabase(in string: String, with database: String) throws -> String {
        try validate(string)
        var message: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(string, &message) else {
            PQfreemem(message)
            throw PostgresError(code: .invalidConnectionString, message: "invalid database connection string")
        }
        defer { PQconninfoFree(options) }
        var pairs: [String] = []
        var option = options
        while let keyword = option.pointee.keyword {
            let name = String(cString: keyword)
            if name == "dbname" {
                pairs.append("dbname=\(quoted(database))")
            } else if let value = option.pointee.val {
                pairs.append("\(name)=\(quoted(String(cString: value)))")
            }
            option += 1
        }
        return pairs.joined(separator: " ")
    }

    /// The database a connection string names (`dbname`), or `nil` when it names none (libpq
    /// then takes the user's name) or cannot be parsed.
    public static func database(in string: String) -> String? {
        guard let options = PQconninfoParse(string, nil) else { return nil }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "dbname" { return option.pointee.val.map { String(cString: $0) } }
            option += 1
        }
        return nil
    }

    /// A conninfo value: single-quoted, with backslashes and quotes escaped.
    private static func quoted(_ value: String) -> String {
        "'" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }
}

public import Foundation

/// A Swift value that can be sent as a query parameter, in PostgreSQL's binary format.
public protocol PostgresEncodable: Sendable {
    /// The parameter's type, sent with the query so the server never guesses.
    static var postgresType: PostgresType { get }
    /// Appends the binary representation of the value; `nil` encodes SQL NULL.
    func postgresBytes() -> [UInt8]?
}

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public static var postgresType: PostgresType { Wrapped.postgresType }
    public func postgresBytes() -> [UInt8]? { self?.postgresBytes() }
}

extension String: PostgresEncodable {
    public static var postgresType: PostgresType { .text }
    public func postgresBytes() -> [UInt8]? { Array(utf8) }
}

extension Bool: PostgresEncodable {
    public static var postgresType: PostgresType { .bool }
    public func postgresBytes() -> [UInt8]? { [self ? 1 : 0] }
}

extension Int: PostgresEncodable {
    public static var postgresType: PostgresType { .int8 }
    public func postgresBytes() -> [UInt8]? { Int64(self).bigEndianBytes }
}

extension Int64: PostgresEncodable {
    public static var postgresType: PostgresType { .int8 }
    public func postgresBytes() -> [UInt8]? { bigEndianBytes }
}

extension Int32: PostgresEncodable {
    public static var postgresType: PostgresType { .int4 }
    public func postgresBytes() -> [UInt8]? { bigEndianBytes }
}

extension Double: PostgresEncodable {
    public static var postgresType: PostgresType { .float8 }
    public func postgresBytes() -> [UInt8]? { bitPattern.bigEndianBytes }
}

extension Date: PostgresEncodable {
    public static var postgresType: PostgresType { .timestamptz }
    public func postgresBytes() -> [UInt8]? { PostgresTime.microseconds(from: self).bigEndianBytes }
}

extension UUID: PostgresEncodable {
    public static var postgresType: PostgresType { .uuid }
    public func postgresBytes() -> [UInt8]? {
        withUnsafeBytes(of: uuid) { Array($0) }
    }
}

extension [UInt8]: PostgresEncodable {
    public static var postgresType: PostgresType { .bytea }
    public func postgresBytes() -> [UInt8]? { self }
}

extension FixedWidthInteger {
    var bigEndianBytes: [UInt8] {
        withUnsafeBytes(of: bigEndian) { Array($0) }
    }
}

public import Foundation

/// A Swift value that can be sent as a query parameter, in PostgreSQL's binary format.
public protocol PostgresEncodable: Sendable {
    /// The parameter's type, sent with the query so the server never guesses.
    static var postgresType: PostgresType { get }
    /// Appends the value's binary representation to `buffer`; returns `false`, having appended
    /// nothing, for SQL NULL. (Appending lets an array write its elements into one buffer.)
    func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool
}

extension PostgresEncodable {
    /// The value's binary representation; `nil` encodes SQL NULL.
    public func postgresBytes() -> [UInt8]? {
        var bytes: [UInt8] = []
        return appendPostgresBytes(to: &bytes) ? bytes : nil
    }
}

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public static var postgresType: PostgresType { Wrapped.postgresType }
    public func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool {
        self?.appendPostgresBytes(to: &buffer) ?? false
    }
}

extension String: PostgresEncodable {
    public static var postgresType: PostgresType { .text }
    public func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool {
        buffer.append(contentsOf: utf8)
        return true
    }
}

extension Bool: PostgresEncodable {
    public static var postgresType: PostgresType { .bool }
    public func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool {
        buffer.append(self ? 1 : 0)
        return true
    }
}

extension Int: PostgresEncodable {
    public static var postgresType: PostgresType { .int8 }
    public func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool { buffer.appendBigEndian(Int64(self)) }
}

extension Int64: PostgresEncodable {
    public static var postgresType: PostgresType { .int8 }
    public func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool { buffer.appendBigEndian(self) }
}

extension Int32: PostgresEncodable {
    public static var postgresType: PostgresType { .int4 }
    public func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool { buffer.appendBigEndian(self) }
}

extension Double: PostgresEncodable {
    public static var postgresType: PostgresType { .float8 }
    public func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool { buffer.appendBigEndian(bitPattern) }
}

extension Date: PostgresEncodable {
    public static var postgresType: PostgresType { .timestamptz }
    public func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool {
        buffer.appendBigEndian(PostgresTime.microseconds(from: self))
    }
}

extension UUID: PostgresEncodable {
    public static var postgresType: PostgresType { .uuid }
    public func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool {
        withUnsafeBytes(of: uuid) { buffer.append(contentsOf: $0) }
        return true
    }
}

extension [UInt8]: PostgresEncodable {
    public static var postgresType: PostgresType { .bytea }
    public func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool {
        buffer.append(contentsOf: self)
        return true
    }
}

extension [UInt8] {
    /// Appends `value` in network byte order; `true`, for an encoder to return.
    @discardableResult
    mutating func appendBigEndian(_ value: some FixedWidthInteger) -> Bool {
        Swift.withUnsafeBytes(of: value.bigEndian) { append(contentsOf: $0) }
        return true
    }

    /// Overwrites the bytes at `offset` with `value` in network byte order.
    mutating func replaceBigEndian(at offset: Int, with value: some FixedWidthInteger) {
        Swift.withUnsafeBytes(of: value.bigEndian) { bytes in
            for (index, byte) in bytes.enumerated() { self[offset + index] = byte }
        }
    }
}

public import Foundation

/// One non-NULL value of a result row, in binary format.
///
/// `bytes` points into the result and is valid only inside `PostgresDecodable.init(postgresValue:)`;
/// decoders copy what they keep.
public struct PostgresValue {
    public let type: PostgresType
    public let bytes: UnsafeRawBufferPointer
    /// The column's name, for error messages.
    public let column: String

    @usableFromInline
    init(type: PostgresType, bytes: UnsafeRawBufferPointer, column: String) {
        self.type = type
        self.bytes = bytes
        self.column = column
    }

    /// An error saying this value cannot become a `target`.
    public func decodingError(_ target: Any.Type, reason: String? = nil) -> PostgresError {
        PostgresError(
            code: .decoding,
            message: "cannot decode column \"\(column)\" of type \(type) as \(target)"
                + (reason.map { ": \($0)" } ?? "")
        )
    }

    func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
        guard bytes.count == MemoryLayout<T>.size else { return nil }
        return T(bigEndian: bytes.loadUnaligned(as: T.self))
    }
}

/// A Swift type that a result column can be decoded into, from PostgreSQL's binary format.
public protocol PostgresDecodable {
    init(postgresValue value: PostgresValue) throws
    /// The value standing for SQL NULL; `nil` (the default) makes NULL a decoding error.
    static var postgresNull: Self? { get }
}

extension PostgresDecodable {
    public static var postgresNull: Self? { nil }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public init(postgresValue value: PostgresValue) throws {
        self = .some(try Wrapped(postgresValue: value))
    }

    public static var postgresNull: Self? { .some(.none) }
}

extension String: PostgresDecodable {
    public init(postgresValue value: PostgresValue) throws {
        switch value.type {
        case .text, .varchar, .name, .bpchar, .json:
            self = String(decoding: value.bytes, as: UTF8.self)
        default:
            throw value.decodingError(Self.self)
        }
    }
}

extension Bool: PostgresDecodable {
    public init(postgresValue value: PostgresValue) throws {
        guard value.type == .bool, value.bytes.count == 1 else { throw value.decodingError(Self.self) }
        self = value.bytes[0] != 0
    }
}

extension Int64: PostgresDecodable {
    public init(postgresValue value: PostgresValue) throws {
        let decoded: Int64? =
            switch value.type {
            case .int8: value.integer(Int64.self)
            case .int4: value.integer(Int32.self).map(Int64.init)
            case .int2: value.integer(Int16.self).map(Int64.init)
            case .oid: value.integer(UInt32.self).map(Int64.init)
            case .xid8: value.integer(UInt64.self).flatMap { Int64(exactly: $0) }
            default: nil
            }
        guard let decoded else { throw value.decodingError(Self.self) }
        self = decoded
    }
}

extension Int: PostgresDecodable {
    public init(postgresValue value: PostgresValue) throws {
        self = Int(try Int64(postgresValue: value))
    }
}

extension Int32: PostgresDecodable {
    public init(postgresValue value: PostgresValue) throws {
        guard let decoded = Int32(exactly: try Int64(postgresValue: value)) else {
            throw value.decodingError(Self.self, reason: "value out of range")
        }
        self = decoded
    }
}

extension Double: PostgresDecodable {
    public init(postgresValue value: PostgresValue) throws {
        switch value.type {
        case .float8:
            guard let bits = value.integer(UInt64.self) else { throw value.decodingError(Self.self) }
            self = Double(bitPattern: bits)
        case .float4:
            guard let bits = value.integer(UInt32.self) else { throw value.decodingError(Self.self) }
            self = Double(Float(bitPattern: bits))
        default:
            throw value.decodingError(Self.self)
        }
    }
}

extension Date: PostgresDecodable {
    public init(postgresValue value: PostgresValue) throws {
        guard value.type == .timestamptz || value.type == .timestamp, let micros = value.integer(Int64.self) else {
            throw value.decodingError(Self.self)
        }
        self = PostgresTime.date(fromMicroseconds: micros)
    }
}

extension UUID: PostgresDecodable {
    public init(postgresValue value: PostgresValue) throws {
        guard value.type == .uuid, value.bytes.count == 16 else { throw value.decodingError(Self.self) }
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { $0.copyMemory(from: value.bytes) }
        self = UUID(uuid: uuid)
    }
}

extension [UInt8]: PostgresDecodable {
    public init(postgresValue value: PostgresValue) throws {
        guard value.type == .bytea else { throw value.decodingError(Self.self) }
        self = Array(value.bytes)
    }
}

/// A one-dimensional array parameter or result (`text[]`, `bigint[]`, `timestamptz[]`, …), in
/// PostgreSQL's binary array format.
public struct PostgresArray<Element>: Sendable where Element: Sendable {
    public var elements: [Element]

    public init(_ elements: [Element]) {
        self.elements = elements
    }
}

/// A type that can be an element of a `PostgresArray` parameter.
public protocol PostgresArrayElement: PostgresEncodable {
    /// The OID of the array type (`text[]` for `text`, …).
    static var postgresArrayType: PostgresType { get }
}

extension PostgresArray: PostgresEncodable where Element: PostgresArrayElement {
    public static var postgresType: PostgresType { Element.postgresArrayType }

    /// The binary array format: a header (dimensions, whether any element is NULL, the element
    /// type, the size and lower bound), then each element's length and bytes, written into one
    /// buffer.
    public func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool {
        buffer.appendBigEndian(Int32(elements.isEmpty ? 0 : 1))  // dimensions
        let hasNulls = buffer.count
        buffer.appendBigEndian(Int32(0))
        buffer.appendBigEndian(Element.postgresType.rawValue)
        guard !elements.isEmpty else { return true }
        buffer.appendBigEndian(Int32(elements.count))
        buffer.appendBigEndian(Int32(1))  // lower bound
        for element in elements {
            let length = buffer.count
            buffer.appendBigEndian(Int32(-1))
            if element.appendPostgresBytes(to: &buffer) {
                buffer.replaceBigEndian(at: length, with: Int32(buffer.count - length - 4))
            } else {
                buffer.replaceBigEndian(at: hasNulls, with: Int32(1))
            }
        }
        return true
    }
}

extension PostgresArray: PostgresDecodable where Element: PostgresDecodable {
    public init(postgresValue value: PostgresValue) throws {
        var reader = ByteReader(value.bytes)
        guard let dimensions = reader.int32(), reader.int32() != nil, let elementOID = reader.uint32() else {
            throw value.decodingError(Self.self, reason: "truncated array header")
        }
        guard dimensions <= 1 else {
            throw value.decodingError(Self.self, reason: "\(dimensions)-dimensional arrays are not supported")
        }
        var count: Int32 = 0
        if dimensions == 1 {
            guard let size = reader.int32(), reader.int32() != nil, size >= 0 else {
                throw value.decodingError(Self.self, reason: "truncated array dimensions")
            }
            count = size
        }
        let elementType = PostgresType(rawValue: elementOID)
        var elements: [Element] = []
        elements.reserveCapacity(Int(count))
        for index in 0..<count {
            guard let length = reader.int32() else { throw value.decodingError(Self.self, reason: "truncated array") }
            if length < 0 {
                guard let null = Element.postgresNull else {
                    throw value.decodingError(Self.self, reason: "element \(index) is NULL")
                }
                elements.append(null)
                continue
            }
            guard let bytes = reader.bytes(Int(length)) else {
                throw value.decodingError(Self.self, reason: "truncated array element")
            }
            elements.append(
                try Element(postgresValue: PostgresValue(type: elementType, bytes: bytes, column: value.column))
            )
        }
        self.elements = elements
    }
}

/// Reads big-endian integers and slices from a binary value.
private struct ByteReader {
    let buffer: UnsafeRawBufferPointer
    var offset = 0

    init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
    }

    mutating func bytes(_ count: Int) -> UnsafeRawBufferPointer? {
        guard count >= 0, offset + count <= buffer.count else { return nil }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count])
    }

    mutating func int32() -> Int32? {
        bytes(4).map { Int32(bigEndian: $0.loadUnaligned(as: Int32.self)) }
    }

    mutating func uint32() -> UInt32? {
        bytes(4).map { UInt32(bigEndian: $0.loadUnaligned(as: UInt32.self)) }
    }
}

extension String: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { .textArray }
}

extension Int: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { .int8Array }
}

extension Int64: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { .int8Array }
}

extension Int32: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { .int4Array }
}

extension Bool: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { .boolArray }
}

extension Double: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { .float8Array }
}

extension JSONB: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { .jsonbArray }
}

extension PostgresTimestamp: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { .timestamptzArray }
}

extension Optional: PostgresArrayElement where Wrapped: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { Wrapped.postgresArrayType }
}

extension [UInt8]: PostgresArrayElement {
    public static var postgresArrayType: PostgresType { .byteaArray }
}

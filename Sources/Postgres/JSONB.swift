/// A JSON document stored as `jsonb`, carried as its UTF-8 text.
///
/// The module does not interpret the JSON; callers encode and decode it with the coder they use.
public struct JSONB: Hashable, Sendable, PostgresEncodable, PostgresDecodable {
    /// The JSON text, UTF-8 encoded.
    public var utf8: [UInt8]

    public init(utf8: [UInt8]) {
        self.utf8 = utf8
    }

    public init(_ text: String) {
        self.utf8 = Array(text.utf8)
    }

    public var text: String { String(decoding: utf8, as: UTF8.self) }

    public static var postgresType: PostgresType { .jsonb }

    /// jsonb's binary format: a version byte (1) followed by the JSON text.
    public func appendPostgresBytes(to buffer: inout [UInt8]) -> Bool {
        buffer.append(1)
        buffer.append(contentsOf: utf8)
        return true
    }

    public init(postgresValue value: PostgresValue) throws {
        switch value.type {
        case .jsonb:
            guard value.bytes.first == 1 else {
                throw value.decodingError(Self.self, reason: "unknown jsonb format version")
            }
            self.utf8 = Array(value.bytes.dropFirst())
        case .json, .text:
            self.utf8 = Array(value.bytes)
        default:
            throw value.decodingError(Self.self)
        }
    }
}

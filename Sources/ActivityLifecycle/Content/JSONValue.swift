/// A JSON value, as the app's `Codable` types see it.
///
/// Its canonical encoding (compact, keys sorted, minimal escapes, shortest number form) is what
/// Liveline measures against the payload limit and stores, so a size measured when a request
/// arrives is the size measured again when the log is replayed.
public indirect enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The canonical UTF-8 encoding.
    public var canonicalJSON: [UInt8] {
        var output: [UInt8] = []
        write(into: &output)
        return output
    }

    func write(into output: inout some JSONOutput) {
        switch self {
        case .null:
            output.append(utf8: "null".utf8)
        case .bool(let value):
            output.append(utf8: (value ? "true" : "false").utf8)
        case .number(let value):
            output.append(utf8: Self.format(value).utf8)
        case .string(let value):
            Self.writeString(value, into: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                element.write(into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            Self.writeObject(members, into: &output)
        }
    }

    static func writeObject(_ members: [String: JSONValue], into output: inout some JSONOutput) {
        if type(of: output).isOrdered {
            writeMembers(members.keys.sorted().lazy.map { ($0, members[$0]!) }, into: &output)
        } else {
            writeMembers(members.lazy.map { ($0.key, $0.value) }, into: &output)
        }
    }

    /// The encoding of an object whose members come in the order given, which is canonical only
    /// when that order is the keys' (nested objects are canonical). For readers that ignore the
    /// order, such as PostgreSQL's `jsonb`, written without sorting.
    public static func objectJSON(orderedMembers members: [(key: String, value: JSONValue)]) -> [UInt8] {
        var output: [UInt8] = []
        writeMembers(members, into: &output)
        return output
    }

    static func writeMembers(_ members: some Sequence<(String, JSONValue)>, into output: inout some JSONOutput) {
        output.append(UInt8(ascii: "{"))
        for (index, (key, value)) in members.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            writeString(key, into: &output)
            output.append(UInt8(ascii: ":"))
            value.write(into: &output)
        }
        output.append(UInt8(ascii: "}"))
    }

    /// Integers in the exactly representable range print without a fraction; others in
    /// Swift's shortest round-tripping form.
    static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 {
            return String(Int64(value))
        }
        return String(value)
    }

    static func writeString(_ value: String, into output: inout some JSONOutput) {
        output.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(utf8: #"\""#.utf8)
            case UInt8(ascii: "\\"): output.append(utf8: #"\\"#.utf8)
            case 0x0A: output.append(utf8: #"\n"#.utf8)
            case 0x0D: output.append(utf8: #"\r"#.utf8)
            case 0x09: output.append(utf8: #"\t"#.utf8)
            case 0x08: output.append(utf8: #"\b"#.utf8)
            case 0x0C: output.append(utf8: #"\f"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                output.append(utf8: #"\u00"#.utf8)
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0xF)])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}

extension JSONValue: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // The decoder cannot say what kind of value comes, so each kind is tried in turn; a failed
        // try costs an error, so the kinds that content holds most come first.
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode(Double.self) {
            guard value.isFinite else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "numbers must be finite")
            }
            self = .number(value)
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode([String: JSONValue].self) {
            self = .object(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

/// Where the canonical encoding goes: its bytes, or only how many there are.
protocol JSONOutput {
    /// Whether members are written in key order (the canonical encoding); a count does not
    /// depend on the order, so it skips sorting.
    static var isOrdered: Bool { get }
    mutating func append(_ byte: UInt8)
    mutating func append(utf8 text: String.UTF8View)
}

extension [UInt8]: JSONOutput {
    static var isOrdered: Bool { true }

    mutating func append(utf8 text: String.UTF8View) { append(contentsOf: text) }
}

/// Counts the bytes of an encoding without making it.
struct JSONByteCount: JSONOutput {
    var count = 0

    static var isOrdered: Bool { false }

    mutating func append(_ byte: UInt8) { count += 1 }

    mutating func append(utf8 text: String.UTF8View) { count += text.count }
}

/// A JSON object (the shape of `attributes` and `contentState`), with its canonical size
/// measured once, when it is made.
public struct JSONObject: Hashable, Sendable {
    public let members: [String: JSONValue]
    /// Bytes of the canonical encoding.
    public let encodedSize: Int

    public init(_ members: [String: JSONValue] = [:]) {
        self.members = members
        var size = JSONByteCount()
        JSONValue.writeObject(members, into: &size)
        self.encodedSize = size.count
    }

    public static let empty = JSONObject()

    /// The canonical UTF-8 encoding.
    public var canonicalJSON: [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(encodedSize)
        JSONValue.writeObject(members, into: &output)
        return output
    }
}

extension JSONObject: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let members = try? container.decode([String: JSONValue].self) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected a JSON object")
        }
        self.init(members)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(members)
    }
}

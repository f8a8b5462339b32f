/// A JSON object (the shape of `attributes` and `contentState`), held as its canonical encoding:
/// the bytes Liveline measures against the payload limit, stores and compares.
///
/// It is made from members, or read from JSON text by `JSONParser.parseObject`, which writes the
/// canonical encoding straight from the text. So an object read from the log and written back
/// (replay) never becomes a dictionary.
public struct JSONObject: Hashable, Sendable {
    /// The canonical UTF-8 encoding.
    public let canonicalJSON: [UInt8]

    public init(_ members: [String: JSONValue] = [:]) {
        var output: [UInt8] = []
        JSONValue.writeObject(members, into: &output)
        self.canonicalJSON = output
    }

    /// An object from its canonical encoding, as this module's writers make it.
    init(canonicalJSON: [UInt8]) {
        self.canonicalJSON = canonicalJSON
    }

    public static let empty = JSONObject()

    /// Bytes of the canonical encoding.
    public var encodedSize: Int { canonicalJSON.count }

    /// The members, parsed from the canonical encoding each time they are asked for.
    public var members: [String: JSONValue] {
        // The encoding was written by this module, so it is an object and it parses.
        guard case .object(let members) = try? JSONParser.parse(canonicalJSON) else {
            preconditionFailure("a JSONObject holds the encoding of an object")
        }
        return members
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

/// Writes a JSON object member by member, in the order they are added. The result is not
/// canonical (keys are not sorted), which suits readers that ignore the order, such as
/// PostgreSQL's `jsonb`; `JSONObject`s go in as their canonical bytes, without being parsed.
public struct JSONObjectWriter: Sendable {
    private var output: [UInt8] = [UInt8(ascii: "{")]

    public init() {}

    /// Adds a member; a `nil` value leaves it out.
    public mutating func add(_ key: String, _ value: JSONValue?) {
        guard let value else { return }
        begin(key)
        value.write(into: &output)
    }

    /// Adds an object member; a `nil` object leaves it out.
    public mutating func add(_ key: String, _ object: JSONObject?) {
        guard let object else { return }
        begin(key)
        output.append(contentsOf: object.canonicalJSON)
    }

    /// Adds a nested object, as written so far; a `nil` one leaves it out.
    public mutating func add(_ key: String, _ object: JSONObjectWriter?) {
        guard let object else { return }
        begin(key)
        output.append(contentsOf: object.json)
    }

    private mutating func begin(_ key: String) {
        if output.count > 1 { output.append(UInt8(ascii: ",")) }
        JSONValue.writeString(key, into: &output)
        output.append(UInt8(ascii: ":"))
    }

    /// The object's encoding, in the order the members were added.
    public var json: [UInt8] { output + [UInt8(ascii: "}")] }

    /// The object, in canonical form.
    public var object: JSONObject {
        // The writer's output is a valid object, so it parses.
        guard let object = try? JSONParser.parseObject(json) else {
            preconditionFailure("a JSONObjectWriter writes valid JSON")
        }
        return object
    }
}

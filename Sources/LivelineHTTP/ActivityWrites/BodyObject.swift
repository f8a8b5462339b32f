import ActivityLifecycle
import CanonicalJSON

/// A JSON object of a request body, read member by member as openapi.yaml describes it: each
/// value is read where it lies in the body's bytes, and anything the document does not admit
/// (an unknown member, `null`, a value of the wrong type, a required member left out) is refused
/// with a problem naming the field as a JSON Pointer.
///
/// The bytes are strict JSON already (`JSONParser.validate`, each key once), so the structure
/// reads; only the values are judged here.
struct BodyObject {
    private let bytes: [UInt8]
    /// The object's JSON Pointer: `""` for the body itself.
    let path: String
    private let members: [String: Range<Int>]

    /// The object in `bytes[range]`, refusing members other than `known`.
    init(_ bytes: [UInt8], _ range: Range<Int>, at path: String, known: Set<String>) throws(Problem) {
        guard bytes[range].first(where: { !JSONParser.isWhitespace($0) }) == UInt8(ascii: "{"),
            let members = try? JSONParser.members(of: bytes, in: range)
        else {
            throw path.isEmpty
                ? Problem.invalidRequest("The body must be a JSON object.")
                : Problem.invalidRequest("The field \(path) must be an object.", field: path)
        }
        var named: [String: Range<Int>] = [:]
        for member in members {
            let key = member.key(in: bytes)
            let field = Self.pointer(path, key)
            guard known.contains(key) else {
                throw Problem.invalidRequest(
                    "Unknown field \(field); the fields each operation takes are listed in /openapi.yaml.",
                    field: field
                )
            }
            if bytes[member.value.lowerBound] == UInt8(ascii: "n") {
                throw Problem.invalidRequest("The field \(field) must not be null; leave it out instead.", field: field)
            }
            named[key] = member.value
        }
        self.bytes = bytes
        self.path = path
        self.members = named
    }

    /// A request's whole body.
    init(body bytes: [UInt8], known: Set<String>) throws(Problem) {
        try self.init(bytes, bytes.indices, at: "", known: known)
    }

    func has(_ key: String) -> Bool { members[key] != nil }

    func field(_ key: String) -> String { Self.pointer(path, key) }

    /// A member that must be there.
    func required<Value>(_ key: String, _ read: (String) throws(Problem) -> Value?) throws(Problem) -> Value {
        guard let value = try read(key) else {
            throw Problem.invalidRequest("The field \(field(key)) is required.", field: field(key))
        }
        return value
    }

    func string(_ key: String) throws(Problem) -> String? {
        guard let range = members[key] else { return nil }
        guard case .string(let text) = try? JSONParser.parse(bytes, in: range) else {
            throw mistyped(key, "a string")
        }
        return text
    }

    func strings(_ key: String) throws(Problem) -> [String]? {
        guard let range = members[key] else { return nil }
        guard case .array(let values) = try? JSONParser.parse(bytes, in: range) else {
            throw mistyped(key, "an array of strings")
        }
        var strings: [String] = []
        for value in values {
            guard case .string(let text) = value else { throw mistyped(key, "an array of strings") }
            strings.append(text)
        }
        return strings
    }

    /// A string that is one of `Value`'s raw values (an identifier, an enumeration);
    /// `requirement` says which strings those are.
    func value<Value: RawRepresentable>(_ key: String, _ requirement: String) throws(Problem) -> Value?
    where Value.RawValue == String {
        guard let text = try string(key) else { return nil }
        guard let value = Value(rawValue: text) else { throw mistyped(key, requirement) }
        return value
    }

    /// A string that is one of the cases of `Value`.
    func enumerated<Value: RawRepresentable & CaseIterable>(_ key: String) throws(Problem) -> Value?
    where Value.RawValue == String {
        try value(key, "one of " + Value.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))
    }

    func timestamp(_ key: String) throws(Problem) -> Timestamp? {
        guard let text = try string(key) else { return nil }
        guard let timestamp = RFC3339.parse(text) else {
            throw mistyped(key, "an RFC 3339 date-time, such as 2026-11-25T12:00:00Z")
        }
        return timestamp
    }

    func number(_ key: String) throws(Problem) -> JSONNumber? {
        guard let range = members[key] else { return nil }
        guard case .number(let number) = try? JSONParser.parse(bytes, in: range) else {
            throw mistyped(key, "a number")
        }
        return number
    }

    /// Free-form JSON (`JSONObject` in the document), in its canonical encoding.
    func object(_ key: String) throws(Problem) -> JSONObject? {
        guard let range = members[key] else { return nil }
        guard bytes[range].first == UInt8(ascii: "{"), let object = try? JSONParser.parseObject(bytes, in: range)
        else { throw mistyped(key, "an object") }
        return object
    }

    /// An object of the document's own schema, with the members it takes.
    func nested(_ key: String, known: Set<String>) throws(Problem) -> BodyObject? {
        guard let range = members[key] else { return nil }
        return try BodyObject(bytes, range, at: field(key), known: known)
    }

    /// The refusal of a member that is there but is not what the document says.
    func mistyped(_ key: String, _ expected: String) -> Problem {
        .invalidRequest("The field \(field(key)) must be \(expected).", field: field(key))
    }

    /// The JSON Pointer (RFC 6901) of member `key` of the object at `path`.
    static func pointer(_ path: String, _ key: String) -> String {
        path + "/" + key.replacing("~", with: "~0").replacing("/", with: "~1")
    }
}

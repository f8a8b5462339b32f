import CanonicalJSON
import Foundation
import PropertyBased
import PropertyChecks
import Testing

@Suite("The strict JSON parser")
struct JSONParserTests {
    @Test(
        "valid documents parse as Foundation's decoder reads them",
        arguments: [
            #"{}"#, #"[]"#, #" { "a" : [ 1 , -2.5e3, 0.125, true, false, null ] } "#, #""é\u00e9\n\"\\\/""#,
            #"{"emoji":"\ud83d\ude00","nested":{"deep":[[[]]]}}"#, #"-0"#, #"1E+2"#, #"123456789012"#,
        ]
    )
    func valid(text: String) throws {
        let parsed = try JSONParser.parse(Array(text.utf8))
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(parsed == decoded)
        try JSONParser.validate(Array(text.utf8))
    }

    @Test(
        "anything else is refused, and U+0000, which PostgreSQL cannot store",
        arguments: [
            "", "{", #"{"a":1,}"#, "[1,]", "01", "1.", ".5", "+1", "1e", #""unterminated"#, "\"tab\there\"",
            #""\x""#, #""\ud800""#, #""\ud800\u0041""#, "nul", "[1 2]", #"{"a" 1}"#, #"{1:2}"#, "1 2", "1e400",
            #"{"a":"x\u0000y"}"#,
        ]
    )
    func invalid(text: String) {
        let parsing = #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(text.utf8)) }
        // Checking without building refuses it the same way, at the same byte.
        let validating = #expect(throws: JSONParser.Failure.self) { try JSONParser.validate(Array(text.utf8)) }
        #expect(validating == parsing)
    }

    @Test("invalid UTF-8 in a string is refused, where it is parsed and where it is only skipped")
    func invalidUTF8() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0x61, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22]] {
            #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(bytes) }
            #expect(throws: JSONParser.Failure.self) { try JSONParser.validate(bytes) }
            let object = Array(#"{"skipped":"#.utf8) + bytes + Array("}".utf8)
            #expect(throws: JSONParser.Failure.self) { try JSONParser.members(of: object, in: object.indices) }
            #expect(throws: JSONParser.Failure.self) { try JSONParser.parseObject(object) }
        }
    }

    @Test("an object's members come in order with where their values lie, each parsing as in the whole")
    func members() throws {
        let text = #" {"b": [1, {"x": "\u00e9"}], "a" : "é", "c":{"d":null}, "e": -2.5e1 } "#
        let bytes = Array(text.utf8)
        let members = try JSONParser.members(of: bytes, in: bytes.indices)
        #expect(members.map { $0.key(in: bytes) } == ["b", "a", "c", "e"])
        #expect(members[1].hasKey("a", in: bytes) && !members[1].hasKey("b", in: bytes))
        guard case .object(let whole) = try JSONParser.parse(bytes) else {
            Issue.record("not an object")
            return
        }
        for member in members {
            #expect(try JSONParser.parse(bytes, in: member.value) == whole[member.key(in: bytes)])
        }
        let nested = try JSONParser.members(of: bytes, in: members[2].value)
        #expect(nested.map { $0.key(in: bytes) } == ["d"])
        #expect(try JSONParser.parse(bytes, in: nested[0].value) == .null)
    }

    @Test("a member's key matches by its bytes, whether or not the text spells it with escapes")
    func memberKeys() throws {
        let bytes = Array(#"{"\u0061":1, "a\"b":2, "é":3, "ab":4}"#.utf8)
        let members = try JSONParser.members(of: bytes, in: bytes.indices)
        #expect(members.map { $0.key(in: bytes) } == ["a", "a\"b", "é", "ab"])
        #expect(members[0].hasKey("a", in: bytes) && !members[0].hasKey("ab", in: bytes))
        #expect(members[1].hasKey("a\"b", in: bytes) && !members[1].hasKey("a", in: bytes))
        #expect(members[2].hasKey("é", in: bytes) && !members[2].hasKey("e\u{301}", in: bytes))
        #expect(members[3].hasKey("ab", in: bytes) && !members[3].hasKey("a", in: bytes))
    }

    @Test(
        "a member whose value is not valid JSON is refused by members(of:in:), though it is not built",
        arguments: [
            "", "01", "1.", "+1", "1e400", #""\x""#, #""\ud800""#, "\"tab\there\"", "nul", "[1,]", "[1 2]",
            #"{"a" 1}"#, #"{"a":"x\u0000y"}"#, "tru",
        ]
    )
    func invalidMember(value: String) {
        let bytes = Array(#"{"k":"#.utf8) + Array(value.utf8) + Array("}".utf8)
        let parsing = #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(bytes) }
        let skipping = #expect(throws: JSONParser.Failure.self) { try JSONParser.members(of: bytes, in: bytes.indices) }
        let reading = #expect(throws: JSONParser.Failure.self) { try JSONParser.parseObject(bytes) }
        #expect(skipping == parsing)
        #expect(reading == parsing)
    }

    @Test("members(of:in:) refuses what is not an object, or more than one value")
    func membersOfNonObjects() {
        for text in ["[]", "\"a\"", "1", "{} {}", "{}x"] {
            let bytes = Array(text.utf8)
            #expect(throws: JSONParser.Failure.self) { try JSONParser.members(of: bytes, in: bytes.indices) }
        }
    }

    @Test(
        "validating with unique keys refuses a key named twice in one object, however it is spelled",
        arguments: [
            (#"{"a":1,"a":2}"#, 7), (#"{"a":1,"\u0061":2}"#, 7), (#"{"x":[{"b":1,"c":2,"b":3}]}"#, 19),
            ("{\"\u{E9}\":1,\"e\u{301}\":2}", 8),
        ]
    )
    func repeatedKeysRefused(text: String, offset: Int) throws {
        try JSONParser.validate(Array(text.utf8))
        let failure = #expect(throws: JSONParser.Failure.self) {
            try JSONParser.validate(Array(text.utf8), refusingRepeatedKeys: true)
        }
        #expect(failure?.offset == offset)
        #expect(failure?.reason.contains("appears twice") == true)
    }

    @Test("the same key in different objects is no repetition")
    func sameKeyInSeveralObjects() throws {
        try JSONParser.validate(Array(#"{"a":{"a":1},"b":[{"a":1},{"a":2}],"c":"a"}"#.utf8), refusingRepeatedKeys: true)
    }

    @Test("nesting deeper than the limit is refused, not a crash")
    func depth() throws {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(deep.utf8)) }
        #expect(throws: JSONParser.Failure.self) { try JSONParser.validate(Array(deep.utf8)) }
        let skipped = Array(#"{"k":"#.utf8) + Array(deep.utf8) + Array("}".utf8)
        #expect(throws: JSONParser.Failure.self) { try JSONParser.members(of: skipped, in: skipped.indices) }
        let fine = String(repeating: "[", count: 200) + String(repeating: "]", count: 200)
        _ = try JSONParser.parse(Array(fine.utf8))
    }

    @Test("an object written in a given order keeps it, nests canonical objects, and parses back")
    func orderedObject() throws {
        var writer = JSONObjectWriter()
        writer.add("z", .number(1))
        writer.add("a", JSONObject(["y": .bool(true), "b": .null]))
        writer.add("absent", nil as JSONValue?)
        var nested = JSONObjectWriter()
        nested.add("tab", .string("\t"))
        writer.add("m", nested)
        #expect(String(decoding: writer.json, as: UTF8.self) == #"{"z":1,"a":{"b":null,"y":true},"m":{"tab":"\t"}}"#)
        let members: [String: JSONValue] = [
            "z": .number(1), "a": .object(["y": .bool(true), "b": .null]), "m": .object(["tab": .string("\t")]),
        ]
        #expect(writer.object == JSONObject(members))
        #expect(writer.object.members == members)
    }

    @Test(
        "a repeated key keeps its first spelling and its last value, as in a dictionary",
        arguments: [
            (#"{"b":1,"a":2,"b":3}"#, #"{"a":2,"b":3}"#), (#"{"\u0061":1,"a":2}"#, #"{"a":2}"#),
            ("{\"\u{E9}\":1,\"e\u{301}\":2}", "{\"\u{E9}\":2}"), ("{\"e\u{301}\":1,\"\u{E9}\":2}", "{\"e\u{301}\":2}"),
        ]
    )
    func repeatedKeys(text: String, canonical: String) throws {
        let read = try JSONParser.parseObject(Array(text.utf8))
        // Bytes, not strings: strings that are canonically equivalent compare equal.
        #expect(read.canonicalJSON == Array(canonical.utf8))
        guard case .object(let members) = try JSONParser.parse(Array(text.utf8)) else { return }
        #expect(read == JSONObject(members))
    }

    @Test("reading an object writes the canonical form that its parsed members have, whatever the text's spelling")
    func canonicalReading() async {
        await checkProperty(count: 500, input: Gen.uint64()) { seed in
            var text = RandomJSONText(seed: seed)
            let bytes = Array(text.object(depth: 0).utf8)
            guard case .object(let members) = try JSONParser.parse(bytes) else {
                Issue.record("not an object")
                return
            }
            let read = try JSONParser.parseObject(bytes)
            #expect(
                read.canonicalJSON == JSONObject(members).canonicalJSON,
                "\(String(decoding: bytes, as: UTF8.self))"
            )
            #expect(read.members == members)
        }
    }

    @Test("the canonical encoding parses back to the same value")
    func roundTrip() async {
        let strings = Gen.letterOrNumber.string(of: 0...8)
        await checkProperty(count: 200, input: strings.array(of: 0...6), Gen.int(in: -1_000_000...1_000_000)) {
            keys,
            number in
            var members: [String: JSONValue] = [:]
            for (index, key) in keys.enumerated() {
                members[key + "\u{1}\"\\"] =
                    switch index % 3 {
                    case 0: .number(JSONNumber(Double(number) / 8))
                    case 1: .string(key + "é😀\n")
                    default: .object([key: .string(key + "é")])
                    }
            }
            let object = JSONObject(members)
            let parsed = try JSONParser.parseObject(object.canonicalJSON)
            #expect(parsed == object)
            #expect(object.encodedSize == object.canonicalJSON.count)
        }
    }
}

/// JSON text of an object spelled in the ways the canonical form undoes: spacing, key order,
/// repeated keys (also spelled differently, or canonically equivalent), escapes, number forms.
struct RandomJSONText {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// SplitMix64.
    private mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private mutating func pick(_ choices: [String]) -> String { choices[Int(next() % UInt64(choices.count))] }

    private mutating func space() -> String { pick(["", "", " ", "\n  ", "\t"]) }

    private mutating func string() -> String {
        let pieces = [
            "a", "Z", "é", #"\u00e9"#, "e\u{301}", #"\n"#, #"\""#, #"\/"#, #"\\"#, #"\ud83d\ude00"#, "😀", #"\u0001"#,
            " ", "\u{7F}",
        ]
        return "\"" + (0..<Int(next() % 4)).map { _ in pick(pieces) }.joined() + "\""
    }

    private mutating func number() -> String {
        if next() % 2 == 0 { return String(Int64(bitPattern: next()) >> Int(next() % 64)) }
        return pick([
            "0", "-0", "-0.0", "1.50", "2.5e3", "1E-2", "0.1", "123456789012345", "1234567890123456",
            "-9007199254740993", "1e21", "5e-324", "1.7976931348623157e308", "100e-2", "9223372036854775807",
            "-9223372036854775808", "9223372036854775808", "9007199254740993.0", "1.0", "1e2",
        ])
    }

    mutating func value(depth: Int) -> String {
        switch next() % (depth < 3 ? 7 : 5) {
        case 0: return number()
        case 1: return string()
        case 2: return pick(["true", "false", "null"])
        case 3: return number()
        case 4: return string()
        case 5: return object(depth: depth + 1)
        default:
            let elements = (0..<Int(next() % 4)).map { _ in space() + value(depth: depth + 1) + space() }
            return "[" + elements.joined(separator: ",") + "]"
        }
    }

    mutating func object(depth: Int) -> String {
        let keys = ["a", "b", "aa", "B", "é", "e\u{301}", #"\u0061"#, "", "a b", #"\""#, "zz", "Ω"]
        let members = (0..<Int(next() % 6)).map { _ in
            space() + "\"" + pick(keys) + "\"" + space() + ":" + space() + value(depth: depth) + space()
        }
        return "{" + members.joined(separator: ",") + space() + "}"
    }
}

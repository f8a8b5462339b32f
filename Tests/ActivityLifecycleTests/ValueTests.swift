import ActivityLifecycle
import CanonicalJSON
import Foundation
import PropertyBased
import Testing

@Suite("RFC 3339 timestamps")
struct TimestampTests {
    @Test(
        "valid date-times parse to the exact microsecond",
        arguments: [
            ("1970-01-01T00:00:00Z", 0),
            ("2026-11-21T05:42:00Z", 1_795_239_720_000_000),
            ("2026-11-21T05:42:00.123456Z", 1_795_239_720_123_456),
            ("2026-11-21T05:42:00.1234569Z", 1_795_239_720_123_456),
            ("2026-11-21T07:42:00+02:00", 1_795_239_720_000_000),
            ("2026-11-21t05:42:00.5z", 1_795_239_720_500_000),
            ("2024-02-29T23:59:59-00:30", 1_709_252_999_000_000),
            ("1969-12-31T23:59:59.999999Z", -1),
        ]
    )
    func parses(text: String, micros: Int64) {
        #expect(RFC3339.parse(text) == Timestamp(microsecondsSince1970: micros))
    }

    @Test(
        "anything else is refused, and U+0000, which PostgreSQL cannot store",
        arguments: [
            "", "2026-11-21", "2026-11-21T05:42:00", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z",
            "2026-11-21T24:00:00Z", "2026-11-21T05:60:00Z", "2026-11-21T05:42:00.Z", "2026-11-21T05:42:00+2:00",
            "2026-11-21T05:42:00Z junk", "tomorrow", "2026-11-21T05:42:00+24:00", "２０２６-11-21T05:42:00Z",
        ]
    )
    func refuses(text: String) {
        #expect(RFC3339.parse(text) == nil)
    }

    @Test("formatting and parsing round-trip any instant")
    func roundTrip() async {
        await propertyCheck(count: 500, input: Gen.int64(in: -2_000_000_000_000_000...8_000_000_000_000_000)) {
            micros in
            let timestamp = Timestamp(microsecondsSince1970: micros)
            #expect(RFC3339.parse(RFC3339.format(timestamp)) == timestamp)
        }
    }

    @Test("formatting agrees with Foundation's ISO 8601 formatter")
    func agreesWithFoundation() {
        let timestamp = Timestamp(microsecondsSince1970: 1_795_239_720_000_000)
        let date = Date(timeIntervalSince1970: 1_795_239_720)
        #expect(RFC3339.format(timestamp) == ISO8601DateFormatter().string(from: date))
    }

    @Test("timestamps are RFC 3339 strings in JSON")
    func codable() throws {
        let timestamp = Timestamp(microsecondsSince1970: 1_795_239_720_250_000)
        let data = try JSONEncoder().encode([timestamp])
        #expect(String(decoding: data, as: UTF8.self) == #"["2026-11-21T05:42:00.250000Z"]"#)
        #expect(try JSONDecoder().decode([Timestamp].self, from: data) == [timestamp])
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([Timestamp].self, from: Data(#"["soon"]"#.utf8))
        }
    }
}

@Suite("JSON content")
struct JSONContentTests {
    @Test("JSON objects decode with their canonical size, whatever the input's spacing")
    func decodes() throws {
        let object = try JSONDecoder().decode(
            JSONObject.self,
            from: Data(#"{ "b" : [1, 2.5, true, null], "a": {"x": "y"} }"#.utf8)
        )
        #expect(String(decoding: object.canonicalJSON, as: UTF8.self) == #"{"a":{"x":"y"},"b":[1,2.5,true,null]}"#)
        #expect(object.encodedSize == 37)
    }

    @Test("only objects are JSON objects", arguments: ["[]", "1", "\"x\"", "null", "true"])
    func onlyObjects(text: String) {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(JSONObject.self, from: Data(text.utf8)) }
    }

    @Test("control characters are escaped in the canonical form")
    func escapes() {
        let object = JSONObject(["k": .string("a\u{01}b\tc")])
        #expect(String(decoding: object.canonicalJSON, as: UTF8.self) == #"{"k":"a\u0001b\tc"}"#)
    }

    @Test("the canonical form parses back to the same value")
    func roundTrip() async throws {
        let value = JSONValue.object([
            "n": .number(-12.75), "big": .number(1e21), "s": .string("€ \"q\" \\"), "a": .array([.bool(false), .null]),
        ])
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(value.canonicalJSON))
        #expect(decoded == value)
    }

    @Test(
        "integers are exact over the 64-bit range, and each number has one canonical spelling, however it is read",
        arguments: [
            ("9007199254740993", "9007199254740993"), ("-9007199254740993", "-9007199254740993"),
            ("9223372036854775807", "9223372036854775807"), ("-9223372036854775808", "-9223372036854775808"),
            ("9223372036854775808", "9.223372036854776e+18"), ("1.0", "1"), ("1e2", "100"), ("100e-2", "1"),
            ("-0", "0"), ("-0.0", "0"), ("9007199254740993.0", "9007199254740993"), ("0.5", "0.5"),
            ("1e21", "1e+21"), ("9007199254740993e0", "9007199254740993"), ("90071992547409930e-1", "9007199254740993"),
            ("1.50", "1.5"), ("0.000", "0"), ("0e-5", "0"), ("-1.5e1", "-15"), ("5e-324", "5e-324"), ("0.1e1", "1"),
            ("12.50e1", "125"), ("100e-3", "0.1"), ("1200e-2", "12"),
        ]
    )
    func numbers(text: String, canonical: String) throws {
        #expect(try JSONParser.parse(Array(text.utf8)).canonicalJSON == Array(canonical.utf8))
        let object = "{\"n\":\(text)}"
        let expected = Array("{\"n\":\(canonical)}".utf8)
        // Read directly (replay, the log), and through `Decodable` (the HTTP API).
        #expect(try JSONParser.parseObject(Array(object.utf8)).canonicalJSON == expected)
        let decoded = try JSONDecoder().decode(JSONObject.self, from: Data(object.utf8))
        #expect(decoded.canonicalJSON == expected)
        // And written back through `Encodable` as the same number.
        let encoded = try JSONEncoder().encode(decoded)
        #expect(try JSONParser.parseObject(Array(encoded)).canonicalJSON == expected)
    }

    @Test("equal numbers are equal values, whatever their spelling")
    func equalNumbers() throws {
        #expect(try JSONParser.parse(Array("1.0".utf8)) == .number(1))
        #expect(try JSONParser.parse(Array("1e2".utf8)) == .number(100))
        #expect(JSONNumber(9_007_199_254_740_993).double == 9_007_199_254_740_992)
        #expect(JSONNumber(2.5).integer == nil)
        #expect(JSONNumber(-0.0) == 0)
    }

    @Test("relevance scores are finite and not negative")
    func relevance() {
        #expect(RelevanceScore(0) != nil)
        #expect(RelevanceScore(12.5) != nil)
        #expect(RelevanceScore(-0.1) == nil)
        #expect(RelevanceScore(.infinity) == nil)
        #expect(RelevanceScore(.nan) == nil)
    }
}

@Suite("Identifiers")
struct IdentifierTests {
    @Test(
        "1–128 characters of A-Z a-z 0-9 . _ : -",
        arguments: ["a", "Order-42", "com.example:live_1", String(repeating: "x", count: 128)]
    )
    func valid(text: String) {
        #expect(ActivityID(rawValue: text)?.rawValue == text)
        #expect(AppID(rawValue: text) != nil)
    }

    @Test(
        "anything else is refused, and U+0000, which PostgreSQL cannot store",
        arguments: ["", String(repeating: "x", count: 129), "a b", "a/b", "é", "a\n", "a%20", "😀"]
    )
    func invalid(text: String) {
        #expect(ActivityID(rawValue: text) == nil)
        #expect(DeviceID(rawValue: text) == nil)
    }

    @Test("decoding an invalid identifier fails with the rule")
    func decoding() {
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([ActivityID].self, from: Data(#"["a b"]"#.utf8))
        }
    }
}

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
        await propertyCheck(count: 500, input: Gen.uint64()) { seed in
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
        await propertyCheck(count: 200, input: strings.array(of: 0...6), Gen.int(in: -1_000_000...1_000_000)) {
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

import CanonicalJSON
import Foundation
import PropertyBased
import Testing

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
}

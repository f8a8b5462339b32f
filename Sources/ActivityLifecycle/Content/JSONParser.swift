/// A strict JSON parser (RFC 8259) into `JSONValue`, much faster than going through `Codable`.
/// Used where JSON is read in bulk: projection rows and event data from the database.
public enum JSONParser {
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        public let offset: Int
        public let reason: String

        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    /// Nesting deeper than this is refused rather than risking the stack.
    public static let maximumDepth = 256

    public static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        try parse(bytes, in: bytes.indices)
    }

    /// Parses the value in `bytes[range]` (with optional whitespace around it).
    public static func parse(_ bytes: [UInt8], in range: Range<Int>) throws(Failure) -> JSONValue {
        try withParser(bytes, range) { parser throws(Failure) in try parser.value(depth: 0) }
    }

    /// Checks that `bytes` hold one valid JSON value, building nothing: refuses exactly what
    /// `parse` refuses, with the same failure.
    ///
    /// With `refusingRepeatedKeys`, it also refuses an object that names a key twice (RFC 7493's
    /// I-JSON), keys compared as Swift compares strings: readers disagree on which of two values
    /// wins (`parse` and PostgreSQL's `jsonb` keep the last, Foundation's decoder the first), and
    /// a dictionary merges keys that are spelled differently but canonically equivalent.
    public static func validate(_ bytes: [UInt8], refusingRepeatedKeys: Bool = false) throws(Failure) {
        try withParser(bytes, bytes.indices) { parser throws(Failure) in
            try parser.skipValue(depth: 0, refusingRepeatedKeys: refusingRepeatedKeys)
        }
    }

    /// Parses a JSON object.
    public static func parseObject(_ bytes: [UInt8]) throws(Failure) -> JSONObject {
        try parseObject(bytes, in: bytes.indices)
    }

    /// Parses the JSON object in `bytes[range]`, writing its canonical encoding as it goes
    /// rather than building its members: refuses exactly what `parse` refuses, and the result
    /// equals `JSONObject` made of what `parse` returns.
    public static func parseObject(_ bytes: [UInt8], in range: Range<Int>) throws(Failure) -> JSONObject {
        try withParser(bytes, range) { parser throws(Failure) in
            guard parser.index < parser.end, parser.bytes[parser.index] == UInt8(ascii: "{") else {
                throw parser.failure("expected an object")
            }
            var output: [UInt8] = []
            output.reserveCapacity(range.count)
            try parser.canonical(depth: 0, into: &output)
            return JSONObject(canonicalJSON: output)
        }
    }

    /// A member of an object, by where it lies in the text.
    public struct Member: Sendable {
        /// The key's text, between its quotes.
        public let keyText: Range<Int>
        /// The key, when its text has escapes; otherwise the text is the key's UTF-8.
        let escapedKey: String?
        /// The value's text.
        public let value: Range<Int>

        /// The key.
        public func key(in bytes: [UInt8]) -> String {
            escapedKey ?? String(decoding: bytes[keyText], as: UTF8.self)
        }

        /// Whether the key is `key`, compared by UTF-8 bytes, without making a `String`.
        public func hasKey(_ key: StaticString, in bytes: [UInt8]) -> Bool {
            key.withUTF8Buffer { wanted in
                if let escapedKey { return escapedKey.utf8.elementsEqual(wanted) }
                return keyText.count == wanted.count && bytes[keyText].elementsEqual(wanted)
            }
        }
    }

    /// The members of the object in `bytes[range]`, in order, each with where its key and value
    /// lie in `bytes`. The values are checked but not built, so a reader that needs a few members
    /// of a large object parses only those (with `parse(_:in:)` or `members(of:in:)` again).
    public static func members(of bytes: [UInt8], in range: Range<Int>) throws(Failure) -> [Member] {
        try withParser(bytes, range) { parser throws(Failure) in
            var members: [Member] = []
            try parser.object(depth: 0) { parser, key throws(Failure) in
                let start = parser.index
                try parser.skipValue(depth: 1)
                members.append(Member(keyText: key.text, escapedKey: key.escaped, value: start..<parser.index))
            }
            return members
        }
    }

    /// Runs `read` over the value in `bytes[range]` and checks that nothing but whitespace
    /// surrounds it.
    private static func withParser<T>(
        _ bytes: [UInt8],
        _ range: Range<Int>,
        _ read: (inout Parser) throws(Failure) -> T
    ) throws(Failure) -> T {
        precondition(range.lowerBound >= 0 && range.upperBound <= bytes.count, "range outside the bytes")
        let result: Result<T, Failure> = bytes.withUnsafeBufferPointer { buffer in
            var parser = Parser(bytes: buffer, index: range.lowerBound, end: range.upperBound)
            return Result { () throws(Failure) -> T in
                parser.skipWhitespace()
                let value = try read(&parser)
                parser.skipWhitespace()
                guard parser.index == parser.end else { throw parser.failure("unexpected data after the value") }
                return value
            }
        }
        return try result.get()
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index: Int
        let end: Int

        func failure(_ reason: String) -> Failure { Failure(offset: index, reason: reason) }

        mutating func skipWhitespace() {
            while index < end {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func expect(_ literal: StaticString, _ value: JSONValue) throws(Failure) -> JSONValue {
            let text = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
            guard end - index >= text.count, bytes[index..<index + text.count].elementsEqual(text) else {
                throw failure("expected \(literal)")
            }
            index += text.count
            return value
        }

        mutating func value(depth: Int) throws(Failure) -> JSONValue {
            guard depth < JSONParser.maximumDepth else { throw failure("nested too deeply") }
            guard index < end else { throw failure("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                var members: [String: JSONValue] = [:]
                try object(depth: depth) { parser, key throws(Failure) in
                    members[parser.string(key)] = try parser.value(depth: depth + 1)
                }
                return .object(members)
            case UInt8(ascii: "["):
                var elements: [JSONValue] = []
                try array(depth: depth) { parser throws(Failure) in elements.append(try parser.value(depth: depth + 1))
                }
                return .array(elements)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try expect("true", .bool(true))
            case UInt8(ascii: "f"): return try expect("false", .bool(false))
            case UInt8(ascii: "n"): return try expect("null", .null)
            default: return .number(try number().value)
            }
        }

        /// Checks the value at `index` and moves past it, building nothing.
        mutating func skipValue(depth: Int, refusingRepeatedKeys: Bool = false) throws(Failure) {
            guard depth < JSONParser.maximumDepth else { throw failure("nested too deeply") }
            guard index < end else { throw failure("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                var keys: Set<String> = []
                try object(depth: depth) { parser, key throws(Failure) in
                    if refusingRepeatedKeys {
                        let name = parser.string(key)
                        guard keys.insert(name).inserted else {
                            // At the repeated key's opening quote.
                            throw Failure(
                                offset: key.text.lowerBound - 1,
                                reason: "the key \"\(name)\" appears twice in one object"
                            )
                        }
                    }
                    try parser.skipValue(depth: depth + 1, refusingRepeatedKeys: refusingRepeatedKeys)
                }
            case UInt8(ascii: "["):
                try array(depth: depth) { parser throws(Failure) in
                    try parser.skipValue(depth: depth + 1, refusingRepeatedKeys: refusingRepeatedKeys)
                }
            case UInt8(ascii: "\""):
                _ = try stringText()
            default:
                _ = try value(depth: depth)
            }
        }

        /// Checks the value at `index`, moves past it and appends its canonical encoding to
        /// `output`, as `JSONValue.write(into:)` would write what `value(depth:)` returns.
        mutating func canonical(depth: Int, into output: inout [UInt8]) throws(Failure) {
            guard depth < JSONParser.maximumDepth else { throw failure("nested too deeply") }
            guard index < end else { throw failure("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"):
                try canonicalObject(depth: depth, into: &output)
            case UInt8(ascii: "["):
                output.append(UInt8(ascii: "["))
                var isFirst = true
                try array(depth: depth) { parser throws(Failure) in
                    if !isFirst { output.append(UInt8(ascii: ",")) }
                    isFirst = false
                    try parser.canonical(depth: depth + 1, into: &output)
                }
                output.append(UInt8(ascii: "]"))
            case UInt8(ascii: "\""):
                let start = index + 1
                if let (text, isASCII) = try plainString() {
                    // Without escapes, the text is its own canonical form once it is valid.
                    guard isASCII || String(validating: text, as: UTF8.self) != nil else {
                        throw Failure(offset: start, reason: "invalid UTF-8")
                    }
                    output.append(UInt8(ascii: "\""))
                    output.append(contentsOf: text)
                    output.append(UInt8(ascii: "\""))
                } else {
                    JSONValue.writeString(try escapedString(from: start), into: &output)
                }
            case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
                let start = index
                _ = try value(depth: depth)
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
            default:
                let start = index
                let (number, isInteger) = try number()
                // An integer written as one is already in canonical form, unless it is -0.
                if isInteger, number != 0 {
                    output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                } else {
                    number.write(into: &output)
                }
            }
        }

        /// An object in canonical form: written as it comes, then, unless its keys came in
        /// order, rewritten in key order, a repeated key keeping its first spelling and its last
        /// value (as a dictionary does).
        mutating func canonicalObject(depth: Int, into output: inout [UInt8]) throws(Failure) {
            let start = output.count
            output.append(UInt8(ascii: "{"))
            // Where each member's key and value begin in `output`.
            var members: [(key: String, keyStart: Int, valueStart: Int)] = []
            var isOrdered = true
            try object(depth: depth) { parser, text throws(Failure) in
                let key = parser.string(text)
                if let previous = members.last {
                    if !(previous.key < key) { isOrdered = false }
                    output.append(UInt8(ascii: ","))
                }
                let keyStart = output.count
                JSONValue.writeString(key, into: &output)
                output.append(UInt8(ascii: ":"))
                members.append((key, keyStart, output.count))
                try parser.canonical(depth: depth + 1, into: &output)
            }
            output.append(UInt8(ascii: "}"))
            guard !isOrdered else { return }
            let written = Array(output[start...])
            output.removeSubrange(start...)
            // Each member's value ends where the next member's comma is, the last one's at the `}`.
            let valueEnds = members.dropFirst().map { $0.keyStart - 1 } + [start + written.count - 1]
            func bytes(_ range: Range<Int>) -> ArraySlice<UInt8> {
                written[(range.lowerBound - start)..<(range.upperBound - start)]
            }
            let order = members.indices.sorted { (members[$0].key, $0) < (members[$1].key, $1) }
            output.append(UInt8(ascii: "{"))
            var first = 0
            while first < order.count {
                var last = first
                while last + 1 < order.count, members[order[last + 1]].key == members[order[first]].key { last += 1 }
                if first > 0 { output.append(UInt8(ascii: ",")) }
                let spelling = members[order[first]]
                let value = order[last]
                output.append(contentsOf: bytes(spelling.keyStart..<spelling.valueStart))
                output.append(contentsOf: bytes(members[value].valueStart..<valueEnds[value]))
                first = last + 1
            }
            output.append(UInt8(ascii: "}"))
        }

        /// A string as the text has it: where it lies between its quotes, and the string itself
        /// when it has escapes (without them, the text is the string's UTF-8, checked).
        struct StringText {
            let text: Range<Int>
            let escaped: String?
        }

        func string(_ text: StringText) -> String {
            text.escaped ?? String(decoding: UnsafeBufferPointer(rebasing: bytes[text.text]), as: UTF8.self)
        }

        /// Reads an object, handing each key to `member`, which reads the value.
        mutating func object(
            depth: Int,
            _ member: (inout Parser, StringText) throws(Failure) -> Void
        ) throws(Failure) {
            guard index < end, bytes[index] == UInt8(ascii: "{") else { throw failure("expected an object") }
            index += 1
            skipWhitespace()
            if index < end, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return
            }
            while true {
                skipWhitespace()
                guard index < end, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a key") }
                let key = try stringText()
                skipWhitespace()
                guard index < end, bytes[index] == UInt8(ascii: ":") else { throw failure("expected ':'") }
                index += 1
                skipWhitespace()
                try member(&self, key)
                skipWhitespace()
                guard index < end else { throw failure("unexpected end in an object") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return
                } else {
                    throw failure("expected ',' or '}'")
                }
            }
        }

        /// Reads an array, letting `element` read each element.
        mutating func array(depth: Int, _ element: (inout Parser) throws(Failure) -> Void) throws(Failure) {
            index += 1
            skipWhitespace()
            if index < end, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                skipWhitespace()
                try element(&self)
                skipWhitespace()
                guard index < end else { throw failure("unexpected end in an array") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return
                } else {
                    throw failure("expected ',' or ']'")
                }
            }
        }

        mutating func string() throws(Failure) -> String {
            string(try stringText())
        }

        /// Moves past a string, checking it, and says where its text lies.
        mutating func stringText() throws(Failure) -> StringText {
            let start = index + 1
            guard let (text, isASCII) = try plainString() else {
                let string = try escapedString(from: start)
                return StringText(text: start..<index - 1, escaped: string)
            }
            guard isASCII || String(validating: text, as: UTF8.self) != nil else {
                throw Failure(offset: start, reason: "invalid UTF-8")
            }
            return StringText(text: start..<index - 1, escaped: nil)
        }

        /// Moves past a string without escapes (most strings) and returns its bytes, unchecked
        /// as UTF-8 unless all ASCII. At an escape, returns `nil` with `index` on it.
        mutating func plainString() throws(Failure) -> (text: UnsafeBufferPointer<UInt8>, isASCII: Bool)? {
            index += 1
            let start = index
            var allBits: UInt8 = 0
            while index < end {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return (UnsafeBufferPointer(rebasing: bytes[start..<index - 1]), allBits < 0x80)
                case UInt8(ascii: "\\"):
                    return nil
                case 0..<0x20:
                    throw failure("control character in a string")
                default:
                    allBits |= byte
                    index += 1
                }
            }
            throw failure("unterminated string")
        }

        /// The rest of a string from the first escape at `index`, which began at `start`.
        mutating func escapedString(from start: Int) throws(Failure) -> String {
            var output = Array(bytes[start..<index])
            while index < end {
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = String(validating: output, as: UTF8.self) else { throw failure("invalid UTF-8") }
                    return text
                case UInt8(ascii: "\\"):
                    guard index < end else { break }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): output.append(escape)
                    case UInt8(ascii: "b"): output.append(0x08)
                    case UInt8(ascii: "f"): output.append(0x0C)
                    case UInt8(ascii: "n"): output.append(0x0A)
                    case UInt8(ascii: "r"): output.append(0x0D)
                    case UInt8(ascii: "t"): output.append(0x09)
                    case UInt8(ascii: "u"): output += try unicodeEscape()
                    default: throw failure("invalid escape")
                    }
                case 0..<0x20:
                    throw failure("control character in a string")
                default:
                    output.append(byte)
                }
            }
            throw failure("unterminated string")
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard index + 4 <= end else { throw failure("truncated \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                index += 1
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw failure("invalid \\u escape")
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }

        mutating func unicodeEscape() throws(Failure) -> [UInt8] {
            var scalar = try hex4()
            if (0xD800..<0xDC00).contains(scalar) {
                guard index + 2 <= end, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                else { throw failure("unpaired surrogate") }
                index += 2
                let low = try hex4()
                guard (0xDC00..<0xE000).contains(low) else { throw failure("unpaired surrogate") }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            }
            // PostgreSQL stores neither text nor jsonb with U+0000, so no Liveline value holds it.
            guard scalar != 0 else { throw failure("\\u0000 is not allowed (PostgreSQL cannot store it)") }
            guard let unicode = Unicode.Scalar(scalar) else { throw failure("invalid code point") }
            return Array(String(Character(unicode)).utf8)
        }

        /// The number at `index`, and whether it was written as a plain integer (digits only)
        /// that is the integer read. Any spelling of an integer in the 64-bit range (`1e2`,
        /// `9007199254740993.0`) is read exactly, as Foundation's decoder reads it into an `Int64`.
        mutating func number() throws(Failure) -> (value: JSONNumber, isInteger: Bool) {
            let start = index
            if index < end, bytes[index] == UInt8(ascii: "-") { index += 1 }
            let integerDigits = digits()
            guard !integerDigits.isEmpty,
                !(integerDigits.count > 1 && bytes[integerDigits.lowerBound] == UInt8(ascii: "0"))
            else {
                throw failure("invalid number")
            }
            var fractionDigits = index..<index
            if index < end, bytes[index] == UInt8(ascii: ".") {
                index += 1
                fractionDigits = digits()
                guard !fractionDigits.isEmpty else { throw failure("invalid number") }
            }
            var exponent = 0
            var hasExponent = false
            if index < end, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                hasExponent = true
                index += 1
                var sign = 1
                if index < end, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                    if bytes[index] == UInt8(ascii: "-") { sign = -1 }
                    index += 1
                }
                let exponentDigits = digits()
                guard !exponentDigits.isEmpty else { throw failure("invalid number") }
                // Any exponent beyond this makes a number that is no 64-bit integer, or none at all.
                for digit in bytes[exponentDigits] where exponent < 10_000 {
                    exponent = exponent * 10 + Int(digit - UInt8(ascii: "0"))
                }
                exponent *= sign
            }
            let isNegative = integerDigits.lowerBound > start
            if let integer = integer(integerDigits, fractionDigits, exponent: exponent, isNegative: isNegative) {
                return (JSONNumber(integer), fractionDigits.isEmpty && !hasExponent)
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            guard let value = Double(text), value.isFinite else {
                throw failure("number out of range")
            }
            return (JSONNumber(value), false)
        }

        /// Moves past the digits at `index`; where they lie.
        private mutating func digits() -> Range<Int> {
            let start = index
            while index < end, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return start..<index
        }

        /// The value of `integerDigits.fractionDigits × 10^exponent` if it is an integer in the
        /// 64-bit range.
        private func integer(
            _ integerDigits: Range<Int>,
            _ fractionDigits: Range<Int>,
            exponent: Int,
            isNegative: Bool
        ) -> Int64? {
            // The digits that count, and the power of ten that scales them: a fraction's trailing
            // zeros do not count, and a negative exponent must be paid by the whole part's.
            var whole = integerDigits
            var fraction = fractionDigits
            while let last = fraction.last, bytes[last] == UInt8(ascii: "0") { fraction = fraction.dropLast() }
            var scale = exponent - fraction.count
            while scale < 0, fraction.isEmpty, whole.count > 1, bytes[whole.upperBound - 1] == UInt8(ascii: "0") {
                whole = whole.dropLast()
                scale += 1
            }
            guard scale >= 0 else { return nil }
            // Accumulated negatively, so that Int64.min fits.
            var value: Int64 = 0
            func append(_ digits: Range<Int>) -> Bool {
                for digit in bytes[digits] {
                    let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
                    let (next, underflowed) = shifted.subtractingReportingOverflow(Int64(digit - UInt8(ascii: "0")))
                    guard !overflowed, !underflowed else { return false }
                    value = next
                }
                return true
            }
            guard append(whole), append(fraction) else { return nil }
            for _ in 0..<(value == 0 ? 0 : scale) {
                let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
                guard !overflowed else { return nil }
                value = shifted
            }
            if isNegative { return value }
            return value == .min ? nil : -value
        }
    }
}

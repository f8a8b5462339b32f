extension JSONParser {
    /// Reads JSON text from a buffer: the structure (values, objects, arrays) and the canonical
    /// encoding; strings and numbers are in `JSONParser+scalars.swift`.
    struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index: Int
        let end: Int

        func failure(_ reason: String) -> Failure { Failure(offset: index, reason: reason) }

        mutating func skipWhitespace() {
            while index < end, JSONParser.isWhitespace(bytes[index]) { index += 1 }
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
    }
}

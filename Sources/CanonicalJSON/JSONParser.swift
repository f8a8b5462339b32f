/// A strict JSON parser (RFC 8259) into `JSONValue`, much faster than going through `Codable`.
/// Used where JSON is read in bulk: projection rows and event data from the database.
public enum JSONParser {
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        public let offset: Int
        public let reason: String

        public var description: String { "invalid JSON at byte \(offset): \(reason)" }
    }

    /// Whether `byte` is JSON whitespace (space, tab, line feed, carriage return).
    public static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
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
}

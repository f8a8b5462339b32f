/// Reading header values as HTTP writes them, without Foundation's Unicode-wide string
/// operations, which cost microseconds a request on every authenticated call.
extension StringProtocol {
    /// The text without the spaces and tabs HTTP allows around a value or a token (RFC 9110 §5.6.3).
    var trimmingHTTPWhitespace: SubSequence {
        let isBlank: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isBlank($0) }), let last = lastIndex(where: { !isBlank($0) }) else {
            return self[endIndex..<endIndex]
        }
        return self[first...last]
    }

    /// Whether the text is `lowercase` with its ASCII letters in any case, as HTTP compares
    /// schemes and media types; `lowercase` must be lowercase ASCII.
    func equalsIgnoringASCIICase(_ lowercase: StaticString) -> Bool {
        Self.equalIgnoringASCIICase(utf8, lowercase)
    }

    /// Whether the text ends with `lowercase`, its ASCII letters in any case.
    func hasSuffixIgnoringASCIICase(_ lowercase: StaticString) -> Bool {
        Self.equalIgnoringASCIICase(utf8.suffix(lowercase.utf8CodeUnitCount), lowercase)
    }

    private static func equalIgnoringASCIICase(_ bytes: some Sequence<UInt8>, _ lowercase: StaticString) -> Bool {
        lowercase.withUTF8Buffer { expected in
            bytes.elementsEqual(expected) { byte, lower in
                byte == lower || (lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z") && byte == lower - 0x20)
            }
        }
    }
}

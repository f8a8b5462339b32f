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

    /// Whether the text is `lengths` visible ASCII characters (`!` to `~`), as tokens and keys
    /// that travel in headers and paths are.
    func isVisibleASCII(lengths: ClosedRange<Int>) -> Bool {
        lengths.contains(utf8.count) && utf8.allSatisfy { (0x21...0x7E).contains($0) }
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

    /// The text with every byte but the unreserved ones (RFC 3986: `A-Z a-z 0-9 - . _ ~`) written
    /// as `%XX`.
    var percentEscapingAllButUnreserved: String {
        var escaped = ""
        escaped.reserveCapacity(utf8.count)
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                escaped.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                escaped.unicodeScalars.append("%")
                escaped.unicodeScalars.append(upperHexDigits[Int(byte >> 4)])
                escaped.unicodeScalars.append(upperHexDigits[Int(byte & 0x0F)])
            }
        }
        return escaped
    }

    /// The text with its `%XX` escapes decoded; `nil` when it has none, when one is malformed,
    /// or when the result is not UTF-8.
    var removingPercentEscapes: String? {
        guard utf8.contains(UInt8(ascii: "%")) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count)
        var input = utf8.makeIterator()
        while let byte = input.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = input.next().flatMap(Self.hexDigitValue),
                let low = input.next().flatMap(Self.hexDigitValue)
            else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexDigitValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func equalIgnoringASCIICase(_ bytes: some Sequence<UInt8>, _ lowercase: StaticString) -> Bool {
        lowercase.withUTF8Buffer { expected in
            bytes.elementsEqual(expected) { byte, lower in
                byte == lower || (lower >= UInt8(ascii: "a") && lower <= UInt8(ascii: "z") && byte == lower - 0x20)
            }
        }
    }
}

private let upperHexDigits = Array("0123456789ABCDEF".unicodeScalars)

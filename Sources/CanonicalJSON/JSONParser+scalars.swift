extension JSONParser.Parser {
    mutating func string() throws(JSONParser.Failure) -> String {
        string(try stringText())
    }

    /// Moves past a string, checking it, and says where its text lies.
    mutating func stringText() throws(JSONParser.Failure) -> StringText {
        let start = index + 1
        guard let (text, isASCII) = try plainString() else {
            let string = try escapedString(from: start)
            return StringText(text: start..<index - 1, escaped: string)
        }
        guard isASCII || String(validating: text, as: UTF8.self) != nil else {
            throw JSONParser.Failure(offset: start, reason: "invalid UTF-8")
        }
        return StringText(text: start..<index - 1, escaped: nil)
    }

    /// Moves past a string without escapes (most strings) and returns its bytes, unchecked
    /// as UTF-8 unless all ASCII. At an escape, returns `nil` with `index` on it.
    mutating func plainString() throws(JSONParser.Failure) -> (text: UnsafeBufferPointer<UInt8>, isASCII: Bool)? {
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
    mutating func escapedString(from start: Int) throws(JSONParser.Failure) -> String {
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

    mutating func hex4() throws(JSONParser.Failure) -> UInt32 {
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

    mutating func unicodeEscape() throws(JSONParser.Failure) -> [UInt8] {
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
    mutating func number() throws(JSONParser.Failure) -> (value: JSONNumber, isInteger: Bool) {
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

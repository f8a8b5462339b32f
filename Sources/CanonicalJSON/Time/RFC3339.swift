/// RFC 3339 date-times, parsed and formatted exactly (to the microsecond) without Foundation.
public enum RFC3339 {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `t`/`z` and a space separator are
    /// accepted as RFC 3339 allows. Fractions beyond microseconds are truncated.
    public static func parse(_ text: String) -> Timestamp? {
        var scanner = Scanner(bytes: Array(text.utf8))
        guard let year = scanner.digits(4), scanner.skip("-"),
            let month = scanner.digits(2), scanner.skip("-"),
            let day = scanner.digits(2), scanner.skip(anyOf: "Tt "),
            let hour = scanner.digits(2), scanner.skip(":"),
            let minute = scanner.digits(2), scanner.skip(":"),
            let second = scanner.digits(2)
        else { return nil }
        var micros: Int64 = 0
        if scanner.skip(".") {
            var count = 0
            while let digit = scanner.digit() {
                if count < 6 { micros = micros * 10 + Int64(digit) }
                count += 1
            }
            guard count > 0 else { return nil }
            for _ in count..<max(count, 6) { micros *= 10 }
        }
        let offsetSeconds: Int64
        if scanner.skip(anyOf: "Zz") {
            offsetSeconds = 0
        } else if let sign = scanner.take(anyOf: "+-"), let offsetHour = scanner.digits(2), scanner.skip(":"),
            let offsetMinute = scanner.digits(2), offsetHour < 24, offsetMinute < 60
        {
            offsetSeconds = (sign == UInt8(ascii: "-") ? -1 : 1) * Int64(offsetHour * 3600 + offsetMinute * 60)
        } else {
            return nil
        }
        guard scanner.isAtEnd, (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour < 24, minute < 60, second < 61
        else { return nil }
        // A leap second (:60) is folded into the next second, as POSIX time does.
        let days = daysSince1970(year: year, month: month, day: day)
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + second) - offsetSeconds
        return Timestamp(microsecondsSince1970: seconds * 1_000_000 + micros)
    }

    /// Formats in UTC with `Z`, with six fraction digits when the instant has a fraction.
    public static func format(_ timestamp: Timestamp) -> String {
        let micros = timestamp.microsecondsSince1970
        var seconds = micros / 1_000_000
        var fraction = micros % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = civil(fromDaysSince1970: days)
        var text: [UInt8] = []
        text.reserveCapacity(27)
        func append(_ value: Int, width: Int, then separator: Character?) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            if value < 0 || value >= divisor * 10 {
                text += String(value).utf8  // a year outside 0…9999
            } else {
                var rest = value
                while divisor > 0 {
                    text.append(UInt8(ascii: "0") + UInt8(rest / divisor))
                    rest %= divisor
                    divisor /= 10
                }
            }
            if let separator { text.append(separator.asciiValue!) }
        }
        append(year, width: 4, then: "-")
        append(month, width: 2, then: "-")
        append(day, width: 2, then: "T")
        append(Int(secondOfDay / 3600), width: 2, then: ":")
        append(Int(secondOfDay % 3600 / 60), width: 2, then: ":")
        append(Int(secondOfDay % 60), width: 2, then: fraction == 0 ? nil : ".")
        if fraction != 0 { append(Int(fraction), width: 6, then: nil) }
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }

    private static func isLeap(_ year: Int) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysSince1970(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civil(fromDaysSince1970 days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (Int(year), Int(month), Int(day))
    }

    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) {
            self.bytes = bytes
        }

        var isAtEnd: Bool { index == bytes.count }

        mutating func digit() -> Int? {
            guard index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") else {
                return nil
            }
            defer { index += 1 }
            return Int(bytes[index] - UInt8(ascii: "0"))
        }

        mutating func digits(_ count: Int) -> Int? {
            var value = 0
            for _ in 0..<count {
                guard let digit = digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }

        mutating func take(anyOf characters: String) -> UInt8? {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return nil }
            defer { index += 1 }
            return bytes[index]
        }

        mutating func skip(anyOf characters: String) -> Bool {
            take(anyOf: characters) != nil
        }

        mutating func skip(_ character: String) -> Bool {
            take(anyOf: character) != nil
        }
    }
}

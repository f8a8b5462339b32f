/// A JSON number: an integer kept exactly over the whole 64-bit range, any other number as a
/// double.
///
/// An app's `ContentState` may hold `Int64` identifiers, which its decoder on the device reads
/// exactly; a double would round those above 2⁵³ (9007199254740993 would arrive as
/// 9007199254740992). Each value has one representation, so equal numbers are equal however
/// they were spelled: `1`, `1.0` and `1e0` are the integer 1, and so is `-0`.
public struct JSONNumber: Hashable, Sendable {
    private enum Storage: Hashable {
        case integer(Int64)
        case double(Double)
    }

    private let storage: Storage

    public init(_ value: Int64) {
        storage = .integer(value)
    }

    public init(_ value: Int) {
        storage = .integer(Int64(value))
    }

    /// `value` must be finite. An integral value in the 64-bit range becomes that integer.
    public init(_ value: Double) {
        precondition(value.isFinite, "JSON numbers are finite")
        if let integer = Int64(exactly: value) {
            storage = .integer(integer)
        } else {
            storage = .double(value)
        }
    }

    /// The nearest double: the number itself unless it is an integer beyond 2⁵³.
    public var double: Double {
        switch storage {
        case .integer(let value): Double(value)
        case .double(let value): value
        }
    }

    /// The number as an integer, if it is one in the 64-bit range.
    public var integer: Int64? {
        if case .integer(let value) = storage { value } else { nil }
    }

    /// The canonical form: an integer in decimal digits, any other number in Swift's shortest
    /// form that reads back as the same double.
    func write(into output: inout [UInt8]) {
        switch storage {
        case .integer(let value): output.append(contentsOf: String(value).utf8)
        case .double(let value): output.append(contentsOf: String(value).utf8)
        }
    }
}

extension JSONNumber: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral {
    public init(integerLiteral value: Int64) {
        self.init(value)
    }

    public init(floatLiteral value: Double) {
        self.init(value)
    }
}

extension JSONNumber: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let integer = try? container.decode(Int64.self) {
            self.init(integer)
        } else {
            let value = try container.decode(Double.self)
            guard value.isFinite else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "numbers must be finite")
            }
            self.init(value)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch storage {
        case .integer(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        }
    }
}

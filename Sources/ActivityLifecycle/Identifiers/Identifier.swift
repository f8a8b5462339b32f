/// The identifiers callers choose: 1–128 characters of `A-Z a-z 0-9 . _ : -`.
public protocol Identifier: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible
where RawValue == String {
    init(uncheckedRawValue: String)
}

extension Identifier {
    /// A valid identifier, or `nil`.
    public init?(rawValue: String) {
        guard IdentifierRules.isValid(rawValue) else { return nil }
        self.init(uncheckedRawValue: rawValue)
    }

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let identifier = Self(rawValue: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: IdentifierRules.requirement)
            )
        }
        self = identifier
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The syntax every identifier shares.
public enum IdentifierRules {
    public static let maximumLength = 128
    public static let requirement = "1–128 characters of A-Z a-z 0-9 . _ : -"

    public static func isValid(_ text: String) -> Bool {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maximumLength else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"),
                UInt8(ascii: "-"):
                true
            default:
                false
            }
        }
    }
}

/// A tenant: one iOS app.
public struct AppID: Identifier {
    public let rawValue: String

    public init(uncheckedRawValue: String) {
        rawValue = uncheckedRawValue
    }
}

/// One Live Activity of one app, chosen by the caller or generated (a UUID).
public struct ActivityID: Identifier {
    public let rawValue: String

    public init(uncheckedRawValue: String) {
        rawValue = uncheckedRawValue
    }
}

/// A device of an app's user, as the app names it; used by the per-device cap.
public struct DeviceID: Identifier {
    public let rawValue: String

    public init(uncheckedRawValue: String) {
        rawValue = uncheckedRawValue
    }
}

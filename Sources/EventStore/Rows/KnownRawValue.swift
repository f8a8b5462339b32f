import Postgres

/// A text column holding one of a string-backed enum's raw values, recognised by its bytes:
/// reading the log makes no `String` for each event's type (too long to be stored inline) and
/// cause. `value` is `nil` for any other text, so that the caller says what is wrong.
struct KnownRawValue<Value: RawRepresentable & CaseIterable>: PostgresDecodable where Value.RawValue == String {
    let value: Value?

    init(postgresValue value: PostgresValue) throws {
        guard value.type == .text else { throw value.decodingError(Value.self) }
        let bytes = value.bytes
        self.value = Value.allCases.first { known in
            var text = known.rawValue
            return text.withUTF8 { text in
                text.count == bytes.count && UnsafeRawBufferPointer(text).elementsEqual(bytes)
            }
        }
    }
}

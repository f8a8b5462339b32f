/// Reads the CSV that PostgreSQL writes (`COPY … TO STDOUT WITH (FORMAT csv)`), fed in pieces
/// of any size: fields separated by commas, records by newlines; a field in double quotes may
/// hold commas, newlines and doubled quotes. An unquoted empty field is NULL (`nil`), a quoted
/// one the empty text, as PostgreSQL writes them.
public struct CSVRecords: Sendable {
    public struct Malformed: Error, CustomStringConvertible {
        public let record: Int
        public let reason: String
        public var description: String { "CSV record \(record): \(reason)" }
    }

    private enum State {
        case fieldStart, unquoted, quoted, quoteInQuoted
    }

    private var state = State.fieldStart
    private var field: [UInt8] = []
    private var fieldIsQuoted = false
    private var record: [String?] = []
    /// Records completed so far.
    public private(set) var count = 0

    public init() {}

    /// Reads `bytes` and hands each record they complete to `emit`.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, emit: ([String?]) throws -> Void) throws {
        for byte in bytes {
            switch (state, byte) {
            case (.fieldStart, UInt8(ascii: "\"")):
                fieldIsQuoted = true
                state = .quoted
            case (.fieldStart, UInt8(ascii: ",")), (.unquoted, UInt8(ascii: ",")),
                (.quoteInQuoted, UInt8(ascii: ",")):
                endField()
            case (.fieldStart, UInt8(ascii: "\n")), (.unquoted, UInt8(ascii: "\n")),
                (.quoteInQuoted, UInt8(ascii: "\n")):
                endField()
                try emit(record)
                record.removeAll(keepingCapacity: true)
                count += 1
            case (.fieldStart, _), (.unquoted, _):
                field.append(byte)
                state = .unquoted
            case (.quoted, UInt8(ascii: "\"")):
                state = .quoteInQuoted
            case (.quoted, _):
                field.append(byte)
            case (.quoteInQuoted, UInt8(ascii: "\"")):
                field.append(byte)
                state = .quoted
            case (.quoteInQuoted, _):
                throw Malformed(record: count + 1, reason: "a quoted field goes on after its closing quote")
            }
        }
    }

    /// The end of the input: every record must have been ended by its newline.
    public func finish() throws {
        guard state == .fieldStart, record.isEmpty else {
            throw Malformed(record: count + 1, reason: "the input ends inside a record")
        }
    }

    private mutating func endField() {
        record.append(fieldIsQuoted || !field.isEmpty ? String(decoding: field, as: UTF8.self) : nil)
        field.removeAll(keepingCapacity: true)
        fieldIsQuoted = false
        state = .fieldStart
    }
}

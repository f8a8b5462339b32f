import Crypto

/// Turns the CSV a partition's copy writes into an archive's: the copy ends each row with three
/// working columns — the id and bytes (hex) of the key of the row's activity, and the reference
/// that stands for its device — and the archive holds the row's columns with its personal column
/// redacted (`redact`), then `sealed`: the original value sealed under the key, bound to the row
/// (`SealedValue`, in the context `<table>/<the row's key>`). A row without a reference is an erasure's to no one: written as it came.
/// A row without a key (an erasure reached its activity) is redacted and seals nothing; so is a
/// row whose value holds nothing personal (`redact` returns `nil`). Fed in pieces of any size;
/// writes whole rows.
public struct ArchiveSealer {
    public static let workingColumns = ["seal_key_id", "seal_key", "seal_reference"]
    public static let sealedColumn = "sealed"

    /// The personal column's value redacted, given the device's reference and the row's other
    /// columns by name; `nil` when it holds nothing personal.
    public typealias Redact = (_ value: String, _ reference: String, _ column: (String) -> String?) throws -> String?

    private let table: String
    private let rowKey: String
    private let column: String
    private let redact: Redact
    private var records = CSVRecords()
    /// The header's columns by name, once read.
    private var header: [String: Int]?
    private var row = 0
    private var keys: [Int64: SymmetricKey] = [:]
    private var line: [UInt8] = []

    /// Redacts `column` of `table`'s rows with `redact`; each row is known by its `rowKey` column.
    public init(table: String, rowKey: String, column: String, redact: @escaping Redact) {
        self.table = table
        self.rowKey = rowKey
        self.column = column
        self.redact = redact
    }

    /// Reads a piece of the copy's CSV (its header line first) and writes the rows it completes
    /// through `write`.
    public mutating func feed(
        _ bytes: UnsafeRawBufferPointer,
        into write: (UnsafeRawBufferPointer) throws -> Void
    )
        throws
    {
        var records = self.records
        defer { self.records = records }
        try records.feed(bytes) { fields in
            line.removeAll(keepingCapacity: true)
            row += 1
            if let header {
                CSVLine.append(try archived(fields, header: header), to: &line)
            } else {
                let names = fields.map { $0 ?? "" }
                let working = Self.workingColumns.count
                guard names.count > working, Array(names.suffix(working)) == Self.workingColumns,
                    names.contains(column), names.contains(rowKey)
                else {
                    throw CSVRecords.Malformed(
                        record: 1,
                        reason: "the copy has no \(column), \(rowKey) and sealing columns"
                    )
                }
                header = Dictionary(names.enumerated().map { ($1, $0) }) { first, _ in first }
                CSVLine.append(Array(fields.dropLast(working)) + [Self.sealedColumn], to: &line)
            }
            try line.withUnsafeBytes { try write($0) }
        }
    }

    /// The end of the copy: every row was whole.
    public func finish() throws {
        try records.finish()
    }

    /// A row of the archive from a row of the copy.
    private mutating func archived(_ fields: [String?], header: [String: Int]) throws -> [String?] {
        let working = fields.count - Self.workingColumns.count
        var archived = Array(fields[..<working])
        guard let reference = fields[working + 2], let index = header[column], let value = fields[index] else {
            return archived + [nil]
        }
        let redacted = try redact(value, reference) { name in header[name].flatMap { fields[$0] } }
        guard let redacted else { return archived + [nil] }
        archived[index] = redacted
        guard let idText = fields[working], let hex = fields[working + 1] else { return archived + [nil] }
        guard let id = Int64(idText), let key = header[rowKey].flatMap({ fields[$0] }) else {
            throw CSVRecords.Malformed(record: row, reason: "a row to seal has no key id or \(rowKey)")
        }
        let sealing = try keys[id] ?? Self.key(hex: hex, row: row)
        if keys.count > 10_000 { keys.removeAll(keepingCapacity: true) }
        keys[id] = sealing
        return archived + [try SealedValue.seal(value, keyID: id, key: sealing, context: "\(table)/\(key)")]
    }

    private static func key(hex: String, row: Int) throws -> SymmetricKey {
        let digits = Array(hex.utf8)
        guard digits.count == 64 else { throw CSVRecords.Malformed(record: row, reason: "a key is not 32 bytes") }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for index in stride(from: 0, to: 64, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                throw CSVRecords.Malformed(record: row, reason: "a key is not hexadecimal")
            }
            bytes.append(byte)
        }
        return SymmetricKey(data: bytes)
    }
}

/// Writes CSV records as PostgreSQL's `COPY … WITH (FORMAT csv)` does: NULL as an empty field,
/// the empty text as `""`, a field quoted when it holds a comma, a quote, a line break, or is
/// `\.` alone.
public enum CSVLine {
    public static func append(_ fields: [String?], to line: inout [UInt8]) {
        for (index, field) in fields.enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            guard var text = field else { continue }
            text.withUTF8 { bytes in
                guard
                    bytes.isEmpty
                        || (bytes.count == 2 && bytes[0] == UInt8(ascii: "\\") && bytes[1] == UInt8(ascii: "."))
                        || bytes.contains(where: needsQuotes)
                else { return line.append(contentsOf: bytes) }
                line.append(UInt8(ascii: "\""))
                for byte in bytes {
                    if byte == UInt8(ascii: "\"") { line.append(byte) }
                    line.append(byte)
                }
                line.append(UInt8(ascii: "\""))
            }
        }
        line.append(UInt8(ascii: "\n"))
    }

    private static func needsQuotes(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: ","), UInt8(ascii: "\""), UInt8(ascii: "\n"), UInt8(ascii: "\r"): true
        default: false
        }
    }
}

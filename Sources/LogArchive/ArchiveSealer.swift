public import Crypto

/// Turns the CSV a partition's copy writes into an archive's: the copy ends each row with four
/// working columns — the id and bytes (hex) of the key of the row's activity, the row's context,
/// and the text to seal — and the archive holds the row's other columns as they came, then
/// `sealed`: the text sealed under the key (`SealedValue`), empty when there is nothing to seal.
/// Fed in pieces of any size; writes whole rows.
public struct ArchiveSealer {
    public static let workingColumns = ["seal_key_id", "seal_key", "seal_context", "seal_plain"]
    public static let sealedColumn = "sealed"

    private var records = CSVRecords()
    /// The columns kept, once the header line was read.
    private var kept: Int?
    private var row = 0
    private var keys: [Int64: SymmetricKey] = [:]
    private var line: [UInt8] = []

    public init() {}

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
            if let kept {
                CSVLine.append(Array(fields.prefix(kept)) + [try sealed(Array(fields.suffix(4)))], to: &line)
            } else {
                guard fields.count > 4, fields.suffix(4).map({ $0 ?? "" }) == Self.workingColumns else {
                    throw CSVRecords.Malformed(record: 1, reason: "the copy does not end with the sealing columns")
                }
                kept = fields.count - 4
                CSVLine.append(Array(fields.dropLast(4)) + [Self.sealedColumn], to: &line)
            }
            try line.withUnsafeBytes { try write($0) }
        }
    }

    /// The end of the copy: every row was whole.
    public func finish() throws {
        try records.finish()
    }

    private mutating func sealed(_ working: [String?]) throws -> String? {
        guard let plain = working[3], let context = working[2] else { return nil }
        guard let idText = working[0], let id = Int64(idText), let hex = working[1] else {
            throw CSVRecords.Malformed(record: row, reason: "a row to seal has no key")
        }
        let key = try keys[id] ?? Self.key(hex: hex, row: row)
        if keys.count > 10_000 { keys.removeAll(keepingCapacity: true) }
        keys[id] = key
        return try SealedValue.seal(plain, keyID: id, key: key, context: context)
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
            guard let field else { continue }
            let bytes = field.utf8
            let quoted =
                bytes.isEmpty || field == "\\."
                || bytes.contains { [UInt8(ascii: ","), UInt8(ascii: "\""), 10, 13].contains($0) }
            guard quoted else {
                line.append(contentsOf: bytes)
                continue
            }
            line.append(UInt8(ascii: "\""))
            for byte in bytes {
                if byte == UInt8(ascii: "\"") { line.append(byte) }
                line.append(byte)
            }
            line.append(UInt8(ascii: "\""))
        }
        line.append(10)
    }
}

import CompressNIO
import Crypto

/// Turns the CSV a partition's copy writes into an archive's: the copy ends each row with three
/// working columns — the id and bytes (hex) of the key of the row's activity, and the reference
/// that stands for its device — and the archive holds the row's columns with its personal column
/// redacted (`redact`), then `sealed`: the originals of a run of rows sealed together under their
/// key (`SealedRun`). A run is the rows sealed under one key one after another (a stream's
/// events, in the log's order), closed at a thousand rows or a mebibyte of values.
///
/// A row without a reference is an erasure's to no one: written as it came. A row without a key
/// (an erasure reached its activity) is redacted and seals nothing; so is a row whose value holds
/// nothing personal (`redact` returns `nil`). Fed in pieces of any size; writes whole rows, a run's
/// once it is closed.
public struct ArchiveSealer {
    public static let workingColumns = ["seal_key_id", "seal_key", "seal_reference"]
    public static let sealedColumn = "sealed"
    static let runRows = 1_000
    static let runBytes = 1 << 20

    /// The personal column's value redacted, given the device's reference and the row's other
    /// columns by name; `nil` when it holds nothing personal.
    public typealias Redact = (_ value: String, _ reference: String, _ column: (String) -> String?) throws -> String?

    /// The run being gathered: its rows (the archive's, `sealed` last; the first holds the
    /// sealed values) wait to be written until it is sealed.
    private struct Run {
        let keyID: Int64
        let key: SymmetricKey
        let firstRowKey: String
        var plain = SealedRun.Plain()
        var rows: [[String?]] = []
    }

    private let table: String
    private let rowKey: String
    private let column: String
    private let redact: Redact
    private var records = CSVRecords()
    /// The header's columns by name, once read.
    private var header: [String: Int]?
    private var row = 0
    private var keys: [Int64: SymmetricKey] = [:]
    private var run: Run?
    private let compressor = CompressionAlgorithm.deflate().compressor
    private var line: [UInt8] = []

    /// Redacts `column` of `table`'s rows with `redact`; each row is known by its `rowKey` column.
    public init(table: String, rowKey: String, column: String, redact: @escaping Redact) throws {
        self.table = table
        self.rowKey = rowKey
        self.column = column
        self.redact = redact
        try compressor.startStream()
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
            row += 1
            guard let header else { return try writeHeader(fields, into: write) }
            try archive(fields, header: header, into: write)
        }
    }

    /// The end of the copy: every row was whole; the last run is sealed and written.
    public mutating func finish(into write: (UnsafeRawBufferPointer) throws -> Void) throws {
        try records.finish()
        try closeRun(into: write)
    }

    private mutating func writeHeader(_ fields: [String?], into write: (UnsafeRawBufferPointer) throws -> Void) throws {
        let names = fields.map { $0 ?? "" }
        let working = Self.workingColumns.count
        guard names.count > working, Array(names.suffix(working)) == Self.workingColumns, names.contains(column),
            names.contains(rowKey)
        else {
            throw CSVRecords.Malformed(record: 1, reason: "the copy has no \(column), \(rowKey) and sealing columns")
        }
        header = Dictionary(names.enumerated().map { ($1, $0) }) { first, _ in first }
        try writeLine(Array(fields.dropLast(working)) + [Self.sealedColumn], into: write)
    }

    /// A row of the archive from a row of the copy: written, or kept with the run it joins.
    private mutating func archive(
        _ fields: [String?],
        header: [String: Int],
        into write: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        let working = fields.count - Self.workingColumns.count
        var archived = Array(fields[..<working])
        if let reference = fields[working + 2], let index = header[column], let value = fields[index],
            let redacted = try redact(value, reference, { name in header[name].flatMap { fields[$0] } })
        {
            archived[index] = redacted
            if let idText = fields[working], let hex = fields[working + 1] {
                guard let id = Int64(idText), let key = header[rowKey].flatMap({ fields[$0] }) else {
                    throw CSVRecords.Malformed(record: row, reason: "a row to seal has no key id or \(rowKey)")
                }
                return try join(archived, value: value, rowKey: key, keyID: id, hex: hex, into: write)
            }
        }
        guard run != nil else { return try writeLine(archived + [nil], into: write) }
        run!.rows.append(archived + [nil])
        try closeRunIfFull(into: write)
    }

    /// Adds a row whose value is to be sealed to the run of its key, closing the run before when it
    /// is another key's.
    private mutating func join(
        _ archived: [String?],
        value: String,
        rowKey: String,
        keyID: Int64,
        hex: String,
        into write: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        if let run, run.keyID != keyID { try closeRun(into: write) }
        if run == nil {
            let key = try keys[keyID] ?? Self.key(hex: hex, row: row)
            if keys.count > 10_000 { keys.removeAll(keepingCapacity: true) }
            keys[keyID] = key
            run = Run(keyID: keyID, key: key, firstRowKey: rowKey)
            run!.rows.append(archived + [nil])
        } else {
            run!.rows.append(archived + [SealedRun.reference(keyID: keyID, firstRowKey: run!.firstRowKey)])
        }
        run!.plain.append(rowKey: rowKey, value: value)
        try closeRunIfFull(into: write)
    }

    private mutating func closeRunIfFull(into write: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let run, run.rows.count >= Self.runRows || run.plain.bytes.count >= Self.runBytes else { return }
        try closeRun(into: write)
    }

    /// Seals the run's values into its first row and writes its rows.
    private mutating func closeRun(into write: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard var run else { return }
        self.run = nil
        run.rows[0][run.rows[0].count - 1] = try SealedRun.seal(
            run.plain,
            keyID: run.keyID,
            key: run.key,
            context: "\(table)/\(run.firstRowKey)",
            compressor: compressor
        )
        for archived in run.rows { try writeLine(archived, into: write) }
    }

    private mutating func writeLine(_ fields: [String?], into write: (UnsafeRawBufferPointer) throws -> Void) throws {
        line.removeAll(keepingCapacity: true)
        CSVLine.append(fields, to: &line)
        try line.withUnsafeBytes { try write($0) }
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

import CompressNIO
public import Crypto

/// Turns the CSV a partition's copy writes into an archive's: the row's columns with its personal
/// column redacted (`redact`), then `sealed`: the originals of a run of rows sealed together under
/// their activity's key (`SealedRun`). A run is the rows sealed under one key one after another
/// (a stream's events, in the log's order), closed at a thousand rows or a mebibyte of values.
///
/// How each activity's rows are sealed is given before its rows come (`provide`). A row of no
/// activity given is an erasure's to no one: written as it came. A row without a key (an
/// erasure reached its activity) is redacted and seals nothing; so is a row whose value holds
/// nothing personal (`redact` returns `nil`). Fed in pieces of any size; writes whole rows, a run's
/// once it is closed.
public struct ArchiveSealer {
    public static let sealedColumn = "sealed"
    static let runRows = 1_000
    static let runBytes = 1 << 20

    /// The personal column's value redacted, given the device's reference and the row's other
    /// columns by name; `nil` when it holds nothing personal.
    public typealias Redact = (_ value: String, _ reference: String, _ column: (String) -> String?) throws -> String?

    /// How an activity's rows are sealed.
    public struct Sealing: Sendable {
        /// What stands for its device in the redacted values: the device's reference.
        public let reference: String
        /// The key its values are sealed under, by name; `nil` when an erasure reached it.
        public let key: (name: SealedRun.KeyName, key: SymmetricKey)?

        public init(reference: String, key: (name: SealedRun.KeyName, key: SymmetricKey)?) {
            self.reference = reference
            self.key = key
        }
    }

    /// An activity, as `[app id, activity id]`.
    public typealias Activity = [String]

    /// The run being gathered: its rows (the archive's, `sealed` last; the first holds the
    /// sealed values) wait to be written until it is sealed.
    private struct Run {
        let name: SealedRun.KeyName
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
    private var sealings: [Activity: Sealing] = [:]
    private var run: Run?
    private let compressor = CompressionAlgorithm.deflate().compressor
    private var line: [UInt8] = []

    /// Redacts `column` of `table`'s rows with `redact`; each row is known by its `rowKey` column,
    /// and its activity by `app_id` and `activity_id`.
    public init(table: String, rowKey: String, column: String, redact: @escaping Redact) throws {
        self.table = table
        self.rowKey = rowKey
        self.column = column
        self.redact = redact
        try compressor.startStream()
    }

    /// How the activities of the rows fed next are sealed (those given before are forgotten).
    public mutating func provide(_ sealings: [Activity: Sealing]) {
        self.sealings = sealings
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
        guard Set([column, rowKey, "app_id", "activity_id"]).isSubset(of: names) else {
            throw CSVRecords.Malformed(record: 1, reason: "the copy has no \(column), \(rowKey) or activity columns")
        }
        header = Dictionary(names.enumerated().map { ($1, $0) }) { first, _ in first }
        try writeLine(fields + [Self.sealedColumn], into: write)
    }

    /// A row of the archive from a row of the copy: written, or kept with the run it joins.
    private mutating func archive(
        _ fields: [String?],
        header: [String: Int],
        into write: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        var archived = fields
        func field(_ name: String) -> String? { header[name].flatMap { $0 < fields.count ? fields[$0] : nil } }
        if let app = field("app_id"), let activity = field("activity_id"), let sealing = sealings[[app, activity]],
            let index = header[column], let value = field(column),
            let redacted = try redact(value, sealing.reference, field)
        {
            archived[index] = redacted
            if let key = sealing.key {
                guard let rowKey = field(rowKey) else {
                    throw CSVRecords.Malformed(record: row, reason: "a row to seal has no \(self.rowKey)")
                }
                return try join(archived, value: value, rowKey: rowKey, name: key.name, key: key.key, into: write)
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
        name: SealedRun.KeyName,
        key: SymmetricKey,
        into write: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        if let run, run.name != name { try closeRun(into: write) }
        if run == nil {
            run = Run(name: name, key: key, firstRowKey: rowKey)
            run!.rows.append(archived + [nil])
        } else {
            run!.rows.append(archived + [SealedRun.reference(firstRowKey: run!.firstRowKey)])
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
            name: run.name,
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

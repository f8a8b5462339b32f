import CompressNIO
import Crypto
public import Foundation
import NIOCore

/// The values of a run of an archive's rows, sealed together under their activity's key: the
/// run's first row holds `v2.<leaf>.<device>.<base64 of AES-256-GCM's nonce, ciphertext and tag>`
/// — the key named by the activity's leaf of the key tree (12 hexadecimal digits) and its device's
/// reference (empty when its device was not known) —, each later row `v2.@<the first row's key>`.
/// What is sealed is the run's rows' keys and values, in order, NUL after each (PostgreSQL's
/// text holds no NUL), compressed (raw deflate) before it is encrypted: ciphertext does not
/// compress, and a stream's values repeat one another. It is authenticated with its first row
/// (the context `<table>/<row's key>`), and each row finds its own value by its key, so that a
/// value moved to another row does not open.
public enum SealedRun {
    /// A sealed value that does not open: damaged, moved, read out of its run, or sealed under a
    /// key this database never made.
    public struct Unopenable: Error, CustomStringConvertible {
        public let description: String
    }

    static let version = "v2"

    /// The key a run is sealed under, as its first row names it.
    public struct KeyName: Sendable, Equatable {
        public let leaf: UInt64
        public let device: UUID?

        public init(leaf: UInt64, device: UUID?) {
            self.leaf = leaf
            self.device = device
        }

        var text: String {
            let digits = String(leaf, radix: 16)
            return String(repeating: "0", count: max(0, 12 - digits.count)) + digits + "."
                + (device?.uuidString.lowercased() ?? "")
        }
    }

    /// The key a run's first row names; `nil` for a later row of a run.
    public static func keyName(of sealed: String, context: String) throws -> KeyName? {
        try parse(sealed, context: context).name
    }

    /// A sealed value's parts: the key its run's first row names and what it seals, or the
    /// first row's key of the run a later row is in.
    static func parse(_ sealed: String, context: String) throws -> (name: KeyName?, rest: Substring) {
        let prefix = version + "."
        guard sealed.hasPrefix(prefix) else { throw malformed(context) }
        let body = sealed.dropFirst(prefix.count)
        if body.hasPrefix("@") { return (nil, body.dropFirst()) }
        let parts = body.split(separator: ".", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 12, let leaf = UInt64(parts[0], radix: 16),
            parts[1].isEmpty || UUID(uuidString: String(parts[1])) != nil
        else { throw malformed(context) }
        return (KeyName(leaf: leaf, device: parts[1].isEmpty ? nil : UUID(uuidString: String(parts[1]))), parts[2])
    }

    private static func malformed(_ context: String) -> Unopenable {
        Unopenable(description: "\(context): a sealed value is not in the form v2.<leaf>.<device>.<data> or v2.@<row>")
    }

    /// The most a run's values take once opened: a run is closed at a mebibyte
    /// (`ArchiveSealer`), plus its last value.
    static let largestOpened = 64 << 20

    /// The values of a run's rows as they are sealed: each row's key and value, NUL-terminated.
    struct Plain {
        private(set) var bytes: [UInt8] = []

        mutating func append(rowKey: String, value: String) {
            bytes += rowKey.utf8
            bytes.append(0)
            bytes += value.utf8
            bytes.append(0)
        }

        /// The values by row key, in the order they were appended (the first row's key first).
        static func entries(_ bytes: some Collection<UInt8>) throws -> [(rowKey: String, value: String)] {
            let parts = bytes.split(separator: 0, omittingEmptySubsequences: false)
            guard parts.count % 2 == 1, parts.last?.isEmpty == true else {
                throw Unopenable(description: "a sealed run's values are not in pairs")
            }
            return stride(from: 0, to: parts.count - 1, by: 2).map {
                (String(decoding: parts[$0], as: UTF8.self), String(decoding: parts[$0 + 1], as: UTF8.self))
            }
        }
    }

    /// The first row's sealed value of a run whose values are `plain`, compressed by
    /// `compressor` (a raw deflate stream, reset after).
    static func seal(
        _ plain: Plain,
        name: KeyName,
        key: SymmetricKey,
        context: String,
        compressor: any NIOCompressor
    ) throws -> String {
        var input = ByteBuffer(bytes: plain.bytes)
        var deflated = ByteBuffer()
        deflated.reserveCapacity(compressor.maxSize(from: input))
        try compressor.streamDeflate(from: &input, to: &deflated, flush: .finish)
        try compressor.resetStream()
        let box = try AES.GCM.seal(Data(deflated.readableBytesView), using: key, authenticating: Data(context.utf8))
        guard let combined = box.combined else { throw Unopenable(description: "a sealed run has no nonce") }
        return "\(version).\(name.text).\(combined.base64EncodedString())"
    }

    /// A later row's sealed value: where to find it.
    static func reference(firstRowKey: String) -> String {
        "\(version).@\(firstRowKey)"
    }
}

/// Opens an archive's sealed values row by row, in the order the archive holds them (a run's
/// rows follow its first), with the database's keys.
public struct ArchiveUnsealer: Sendable {
    private let table: String
    private let keys: ArchiveKeyRing
    /// The run opened last: its first row's key and its values by row key (`nil`: erased).
    private var run: (firstRowKey: String, values: [String: String]?)?

    public init(table: String, keys: ArchiveKeyRing) {
        self.table = table
        self.keys = keys
    }

    /// The plain value of the row known by `rowKey`, sealed as `sealed`, or `nil` when its key
    /// was erased.
    public mutating func open(_ sealed: String, rowKey: String) throws -> String? {
        let context = "\(table)/\(rowKey)"
        let (name, rest) = try SealedRun.parse(sealed, context: context)
        guard let name else {
            let first = String(rest)
            guard let run, run.firstRowKey == first else {
                throw SealedRun.Unopenable(
                    description: "\(context) is sealed with row \(first), which was not read before it"
                )
            }
            guard let values = run.values else { return nil }
            guard let value = values[rowKey] else {
                throw SealedRun.Unopenable(description: "\(context) is not among the values sealed with row \(first)")
            }
            return value
        }
        let key: SymmetricKey
        switch keys.lookup(leaf: name.leaf, device: name.device) {
        case .erased:
            run = (rowKey, nil)
            return nil
        case .unknown:
            throw SealedRun.Unopenable(
                description: "\(context) is sealed under key \(name.text), which this database cannot derive"
            )
        case .key(let found): key = found
        }
        let entries = try Self.opened(String(rest), key: key, name: name, context: context)
        guard entries.first?.rowKey == rowKey, let value = entries.first?.value else {
            throw SealedRun.Unopenable(description: "\(context): its sealed run begins with another row")
        }
        run = (rowKey, Dictionary(entries.map { ($0.rowKey, $0.value) }) { first, _ in first })
        return value
    }

    private static func opened(
        _ text: String,
        key: SymmetricKey,
        name: SealedRun.KeyName,
        context: String
    ) throws -> [(rowKey: String, value: String)] {
        let deflated: Data
        do {
            guard let combined = Data(base64Encoded: text) else { throw SealedRun.Unopenable(description: "") }
            let box = try AES.GCM.SealedBox(combined: combined)
            deflated = try AES.GCM.open(box, using: key, authenticating: Data(context.utf8))
        } catch {
            throw SealedRun.Unopenable(description: "\(context): its sealed value does not open under key \(name.text)")
        }
        var compressed = ByteBuffer(bytes: deflated)
        let plain: ByteBuffer
        do {
            plain = try compressed.decompress(with: .deflate(), maxSize: SealedRun.largestOpened)
        } catch {
            throw SealedRun.Unopenable(description: "\(context): its sealed run does not decompress")
        }
        return try SealedRun.Plain.entries(plain.readableBytesView)
    }
}

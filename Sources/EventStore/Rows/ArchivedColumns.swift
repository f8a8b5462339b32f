package import CanonicalJSON
package import Foundation
package import LogArchive

/// The columns of an archive's CSV, found by name in its header line: an archive holds the
/// columns its table had when it was written, so rows are read by name, never by place.
package struct ArchivedColumns: Sendable {
    /// An archive whose rows cannot be read as the table's.
    package struct Unreadable: Error, CustomStringConvertible {
        package let description: String
    }

    private let index: [String: Int]

    /// The columns of `header`; throws unless every one of `needed` is there.
    package init(header: [String], needing needed: [String]) throws {
        index = Dictionary(header.enumerated().map { ($1, $0) }) { first, _ in first }
        let missing = needed.filter { index[$0] == nil }
        guard missing.isEmpty else {
            throw Unreadable(description: "the archive has no column \(missing.joined(separator: ", "))")
        }
    }

    /// One data row, read through these columns.
    package func row(_ fields: [String?]) -> ArchivedRow {
        ArchivedRow(index: index, fields: fields)
    }
}

/// A data row of an archive: CSV fields as `COPY` wrote them (an empty unquoted field is NULL),
/// times as PostgreSQL writes them in UTC.
package struct ArchivedRow {
    fileprivate let index: [String: Int]
    fileprivate let fields: [String?]

    /// The column's value, `nil` when NULL or absent from this archive.
    package func optional(_ column: String) -> String? {
        guard let position = index[column], position < fields.count else { return nil }
        return fields[position]
    }

    package func text(_ column: String) throws -> String {
        guard let value = optional(column) else {
            throw ArchivedColumns.Unreadable(description: "a row has no \(column)")
        }
        return value
    }

    /// An integer column; `nil` when NULL.
    package func optionalNumber<Number: FixedWidthInteger>(
        _ column: String,
        as: Number.Type = Number.self
    ) throws
        -> Number?
    {
        guard let written = optional(column) else { return nil }
        guard let number = Number(written) else {
            throw ArchivedColumns.Unreadable(description: "\(column) \(written) is not a whole number")
        }
        return number
    }

    package func number<Number: FixedWidthInteger>(_ column: String, as: Number.Type = Number.self) throws -> Number {
        guard let number = try optionalNumber(column, as: Number.self) else {
            throw ArchivedColumns.Unreadable(description: "a row has no \(column)")
        }
        return number
    }

    /// A `timestamptz` column; `nil` when NULL.
    package func optionalTime(_ column: String) throws -> Timestamp? {
        guard let written = optional(column) else { return nil }
        // PostgreSQL writes the UTC offset as `+00`; RFC 3339 wants `+00:00`.
        guard let time = RFC3339.parse(written.hasSuffix("+00") ? written + ":00" : written) else {
            throw ArchivedColumns.Unreadable(description: "\(column) \(written) is not a time")
        }
        return time
    }

    package func time(_ column: String) throws -> Timestamp {
        guard let time = try optionalTime(column) else {
            throw ArchivedColumns.Unreadable(description: "a row has no \(column)")
        }
        return time
    }
}

/// What became of a row's sealed value as it was read.
package enum Unsealing: Sendable {
    /// The row sealed nothing: its columns are as the table held them, or as an erasure had
    /// left them before it was archived.
    case plain
    /// Its original, opened with its key.
    case opened
    /// Its key was erased: the row reads redacted.
    case erased
}

extension ArchivedRow {
    /// The device whose key the row's sealed run is sealed under with its activity's, named by
    /// the run's first row (`nil` for another row, or one sealed with no device).
    package func sealingDevice() throws -> UUID? {
        guard let sealed = optional(ArchiveSealer.sealedColumn) else { return nil }
        return try SealedRun.keyName(of: sealed, context: "a sealed row")?.device
    }

    /// The value of a column that is never NULL as the table held it: the original sealed
    /// beside the row (`ArchiveSealer.sealedColumn`) when it has one and its key is still there,
    /// or else the column as written. The row is known by `rowKey`; `unsealer` reads the archive's
    /// rows in order. Throws when a sealed value does not open (`SealedRun.Unopenable`).
    package func unsealed(
        _ column: String,
        rowKey: String,
        with unsealer: inout ArchiveUnsealer
    ) throws -> (value: String, unsealing: Unsealing) {
        guard let sealed = optional(ArchiveSealer.sealedColumn) else { return (try text(column), .plain) }
        guard let opened = try unsealer.open(sealed, rowKey: rowKey) else {
            return (try text(column), .erased)
        }
        return (opened, .opened)
    }
}

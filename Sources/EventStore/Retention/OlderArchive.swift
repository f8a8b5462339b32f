import CanonicalJSON
import LogArchive
import Postgres

/// Rewrites an archive written before archives were sealed (`liveline-archive/1`) as a
/// retirement writes one now (`ArchiveRedaction`): its rows read back, a batch at a time, each
/// redacted, and a row of an activity sealed under the activity's key (with its device's: for the
/// log, the device its request named). The new
/// archive replaces the old one in the folder (`ArchiveFolder.write`: written aside, checked,
/// then renamed); the caller records its manifest.
struct OlderArchive {
    static let batchRows = 5_000

    private let manifest: ArchiveManifest
    private let redaction: ArchiveRedaction
    private let connection: Connection
    private var sealer: ArchiveSealer?
    private var header: [String: Int] = [:]
    private var batch: [[String?]] = []
    /// The device each stream's request named (a stream's rows are together, its request first).
    private var devices: [[String]: String] = [:]
    private var line: [UInt8] = []

    private init(_ manifest: ArchiveManifest, _ connection: Connection) throws {
        self.manifest = manifest
        self.connection = connection
        redaction = ArchiveRedaction.of(manifest.table)
        sealer = try redaction.sealing.map {
            try ArchiveSealer(table: manifest.table, rowKey: $0.rowKey, column: $0.column, redact: $0.redact)
        }
    }

    /// Seals the archive of `manifest` in `folder`; its new manifest.
    static func seal(
        _ manifest: ArchiveManifest,
        in folder: ArchiveFolder,
        pause: () throws -> Void,
        _ connection: Connection
    ) throws -> ArchiveManifest {
        try folder.write(
            .init(
                table: manifest.table,
                partition: manifest.partition,
                from: manifest.from,
                to: manifest.to,
                firstPosition: manifest.firstPosition,
                lastPosition: manifest.lastPosition
            ),
            archivedAt: manifest.archivedAt,
            pause: pause
        ) { write in
            var archive = try OlderArchive(manifest, connection)
            var rows = 0
            try folder.read(manifest) { header, fields in
                if rows == 0 { try archive.start(header, into: write) }
                rows += 1
                try archive.take(fields, into: write)
                if rows % batchRows == 0 { try pause() }
            }
            try archive.flush(into: write)
            try archive.sealer?.finish(into: write)
            return rows
        }
    }

    private mutating func start(_ names: [String], into write: (UnsafeRawBufferPointer) throws -> Void) throws {
        header = Dictionary(names.enumerated().map { ($1, $0) }) { first, _ in first }
        try emit(names, into: write)
    }

    private mutating func take(_ fields: [String?], into write: (UnsafeRawBufferPointer) throws -> Void) throws {
        if manifest.table == "events", field("version", of: fields) == "1", let stream = stream(of: fields),
            case .object(let data)? = try? JSONParser.parse(Array((field("data", of: fields) ?? "").utf8)),
            case .string(let device)? = data["deviceId"]
        {
            devices[stream] = device
        }
        batch.append(fields)
        if batch.count == Self.batchRows { try flush(into: write) }
    }

    /// Writes the batch's rows: how their activities are sealed looked up (keys and references
    /// made) for the batch at once, holding erasures off meanwhile (`ArchiveKeyQueries.holdErasures`).
    private mutating func flush(into write: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard !batch.isEmpty else { return }
        let rows = batch
        batch.removeAll(keepingCapacity: true)
        switch redaction.preparation {
        case .sealings:
            var activities: [[String]: ArchivedActivity] = [:]
            for fields in rows {
                guard let stream = stream(of: fields), activities[stream] == nil,
                    let recordedAt = field("recorded_at", of: fields)
                else { continue }
                activities[stream] = ArchivedActivity(
                    app: stream[0],
                    activity: stream[1],
                    recordedAt: recordedAt,
                    device: devices[stream]
                )
            }
            let sealings = try connection.transaction { connection in
                try ArchiveKeyQueries.holdErasures(connection)
                return try ArchiveKeyQueries.sealings(of: Array(activities.values), connection)
            }
            sealer?.provide(sealings)
            for fields in rows { try emit(fields, into: write) }
        case .deviceReferences:
            let devices = Set(rows.compactMap { fields in device(of: fields) })
            let references = try connection.transaction { connection in
                try ArchiveKeyQueries.holdErasures(connection)
                return try ArchiveKeyQueries.references(of: devices, connection)
            }
            for var fields in rows {
                if let device = device(of: fields), let reference = references[device] {
                    set("device_id", to: "erased:" + reference, in: &fields)
                }
                set("device_token", to: nil, in: &fields)
                try emit(fields, into: write)
            }
        case .nothing:
            for var fields in rows {
                for column in redaction.personal { set(column, to: nil, in: &fields) }
                try emit(fields, into: write)
            }
        }
    }

    private mutating func emit(_ fields: [String?], into write: (UnsafeRawBufferPointer) throws -> Void) throws {
        line.removeAll(keepingCapacity: true)
        CSVLine.append(fields, to: &line)
        if sealer != nil {
            try line.withUnsafeBytes { try sealer!.feed($0, into: write) }
        } else {
            try line.withUnsafeBytes { try write($0) }
        }
    }

    private func field(_ name: String, of fields: [String?]) -> String? {
        header[name].flatMap { $0 < fields.count ? fields[$0] : nil }
    }

    private func set(_ name: String, to value: String?, in fields: inout [String?]) {
        if let index = header[name], index < fields.count { fields[index] = value }
    }

    /// `[app, activity]` of a row that names its activity.
    private func stream(of fields: [String?]) -> [String]? {
        guard let app = field("app_id", of: fields), let activity = field("activity_id", of: fields) else { return nil }
        return [app, activity]
    }

    /// `[app, device]` of a reload's row whose device an erasure has not renamed.
    private func device(of fields: [String?]) -> [String]? {
        guard let app = field("app_id", of: fields), let device = field("device_id", of: fields),
            !device.hasPrefix("erased:")
        else { return nil }
        return [app, device]
    }
}

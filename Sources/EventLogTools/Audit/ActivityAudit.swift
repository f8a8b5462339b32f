public import ActivityLifecycle
import CanonicalJSON
import Delivery
public import EventStore
public import LogArchive

/// An activity's audit as `liveline audit` shows it: its timeline, and where its events were
/// read from.
public struct ActivityAudit: Sendable {
    public let entries: [AuditEntry]
    /// The archive that holds its events, once its partition of the log was retired.
    public let archive: ArchiveManifest?
}

extension EventStore {
    /// The activity's timeline: each event with its pushes, its tokens and their deaths, the
    /// widget reloads it asked for, and its refused commands, at most `limit` pushes and refusals (the newest).
    ///
    /// Once its partition of the log was retired, its events are read from the newest archive
    /// in `folder` that holds them, and the rest from the live tables and the archives of their
    /// partitions that were retired too (those tables are retired on their own time): its
    /// pushes and dead tokens from its first event on, its refusals from the beginning of the
    /// log's partition it began in — the same timeline the live log gave.
    ///
    /// - Parameter maskingContent: whether content values are masked (`ContentMask`).
    public func audit(
        of stream: StreamID,
        archives folder: ArchiveFolder?,
        limit: Int = 10_000,
        maskingContent: Bool = false
    ) async throws
        -> ActivityAudit
    {
        let events = try await events(of: stream)
        let rejections = try await rejections(of: stream.app, activity: stream.activity, limit: limit)
        var erasure = try await erasures(of: [stream])[stream].map { [AuditEntry(erasure: $0)] } ?? []
        guard events.isEmpty, let folder,
            let archived = try await ArchiveSearch.find(
                stream,
                in: folder,
                keys: { devices in try await self.archiveKeys(of: stream, devices: devices) }
            ),
            let delivered = DeliveredStream(archived.events)
        else {
            let entries = AuditTimeline.build(
                events: events,
                rejections: rejections,
                deliveries: try await deliveries(of: stream, limit: limit),
                lineage: try await tokenLineage(of: stream),
                reloads: try await reloads(askedBy: stream),
                lifecycle: lifecycle,
                maskingContent: maskingContent
            )
            return ActivityAudit(entries: entries + erasure, archive: nil)
        }
        let sources = ArchivedHistory.Sources(
            deliveries: try await recordedPartitions(of: "deliveries", endingAfter: delivered.since),
            rejections: try await recordedPartitions(
                of: "rejections",
                endingAfter: RFC3339.parse(archived.manifest.from)
            ),
            invalidations: try await recordedPartitions(of: "push_token_invalidations", endingAfter: delivered.since)
        )
        let history = try await ArchivedHistory.read(delivered, from: sources, in: folder, keys: archived.keys)
        // An erasure of its device after its rows were retired names no activity: its device's
        // reference, which the archive names it by.
        if erasure.isEmpty, let reference = archived.deviceReference {
            erasure =
                try await self.erasure(ofDevice: reference, in: stream.app).map { [AuditEntry(erasure: $0)] } ?? []
        }
        let archivedEvents = archived.events.map(\.event)
        let deaths = try await tokenDeaths(of: stream, events: archivedEvents) + history.deaths
        let entries = AuditTimeline.build(
            events: archived.events,
            rejections: Array((rejections + history.rejections).sorted { $0.occurredAt < $1.occurredAt }.suffix(limit)),
            deliveries: Array(
                (try await deliveries(of: delivered, limit: limit) + history.deliveries)
                    .sorted { $0.attemptedAt < $1.attemptedAt }.suffix(limit)
            ),
            lineage: TokenLineage(events: archivedEvents, deaths: deaths),
            reloads: try await reloads(askedBy: stream),
            lifecycle: lifecycle,
            maskingContent: maskingContent
        )
        return ActivityAudit(entries: entries + erasure, archive: archived.manifest)
    }
}

extension AuditEntry {
    /// The erasure that redacted the activity, last in its timeline: who asked and when, and what
    /// stands for its device now.
    init(erasure: Erasure) {
        var data: [String: JSONValue] = [
            "erasureId": .number(JSONNumber(erasure.id)), "requestedBy": .string(erasure.requestedBy.rawValue),
            "requestedAt": .string(erasure.requestedAt.description),
        ]
        if erasure.activity == nil { data["erasedDeviceId"] = .string(erasure.erasedDeviceID.rawValue) }
        self.init(
            position: nil,
            version: nil,
            occurredAt: erasure.finishedAt ?? erasure.requestedAt,
            recordedAt: nil,
            type: "erased",
            cause: nil,
            stateBefore: nil,
            stateAfter: nil,
            summary: "erasure \(erasure.id), asked by \(erasure.requestedBy.rawValue) at \(erasure.requestedAt) "
                + (erasure.activity == nil ? "for its device" : "for this activity")
                + ": content, tokens and device id removed",
            data: JSONObject(data),
            problem: nil
        )
    }
}

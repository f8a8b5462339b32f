import Foundation
public import LogArchive

extension EventStore {
    /// Seals, once each, the archives written before archives were sealed (ADR 0040): each is
    /// rewritten as a retirement writes one now — its personal values redacted, the originals
    /// sealed under keys of their activities, which an erasure destroys — put in place of the old
    /// one, and its manifest recorded anew (`liveline-archive/2`). An archive the database does
    /// not record, or that no longer matches its record, is left for `verify` to report; one
    /// sealed by a run that stopped before recording it is recorded. It works `workShare` of its
    /// time, as retirement does, and one process at a time (retirement's lock). Returns the new
    /// manifests, or `nil` when another process is retiring now.
    public func sealOlderArchives(in folder: ArchiveFolder, workShare: Double = 1) async throws -> [ArchiveManifest]? {
        try await withConnection { connection in
            guard try PartitionRetirementQueries.lockRetirement(connection) else { return nil }
            defer { try? PartitionRetirementQueries.unlockRetirement(connection) }
            let pacer = WorkPacer(share: workShare)
            var sealed: [ArchiveManifest] = []
            for (partition, text) in try OlderArchiveQueries.unsealed(connection) {
                let recorded = try ArchiveManifest.decode(Data(text.utf8))
                let current = try folder.manifests().first { $0.partition == partition && $0.table == recorded.table }
                guard let current else { continue }
                let manifest: ArchiveManifest
                if current.format != recorded.format, current.rows == recorded.rows {
                    // Sealed by a run that stopped before recording it.
                    manifest = current
                } else if current == recorded {
                    manifest = try OlderArchive.seal(recorded, in: folder, pause: pacer.pause, connection)
                } else {
                    continue
                }
                try OlderArchiveQueries.record(
                    String(decoding: try manifest.encoded(), as: UTF8.self),
                    of: partition,
                    replacing: text,
                    connection
                )
                sealed.append(manifest)
            }
            return sealed
        }
    }
}

import ActivityLifecycle
import CanonicalJSON
import EventStore

/// The histories the book folds besides the pages of the log: the earlier versions of a stream
/// a page starts in the middle of, and whole streams loaded again — to resume their held pushes,
/// or because they could not be folded.
extension DeliveryBook {
    /// The earlier events each stream of `page` lacks before its first new event can be folded:
    /// a stream first seen in the middle (a restart, a shard taken over), or one whose events
    /// below a shard's cursor were not read.
    func histories(for page: [StoredEvent]) -> [StreamID: HistoryRequest] {
        var requests: [StreamID: HistoryRequest] = [:]
        var seen: Set<StreamID> = []
        let reads = shards.readPositions
        for stored in page where shards.delivers(stored.stream) {
            guard let read = reads[DeliveryShard.of(stored.stream)], stored.position > read,
                seen.insert(stored.stream).inserted, unreadable[stored.stream] == nil
            else { continue }
            let known = states[stored.stream]?.activity.version ?? 0
            if stored.event.version > known + 1 {
                requests[stored.stream] = HistoryRequest(afterVersion: known, throughPosition: stored.position - 1)
            }
        }
        return requests
    }

    /// Whole streams to load again now: those of a resumed app with pushes held (once the
    /// shard is read past them), and unreadable ones whose retry came due.
    func reloads(at now: Timestamp) -> [StreamID: HistoryRequest] {
        var requests: [StreamID: HistoryRequest] = [:]
        let reads = shards.readPositions
        for (stream, pushes) in held where !pushes.offered && apps[stream.app]?.resumes == true {
            guard shards.delivers(stream), let read = reads[DeliveryShard.of(stream)],
                pushes.positions.allSatisfy({ $0 <= read })
            else { continue }
            requests[stream] = HistoryRequest(afterVersion: 0, throughPosition: read)
        }
        for (stream, unreadable) in unreadable where now >= unreadable.retryAt {
            guard shards.delivers(stream), let read = reads[DeliveryShard.of(stream)] else { continue }
            requests[stream] = HistoryRequest(afterVersion: 0, throughPosition: read)
        }
        return requests
    }

    /// Folds what was loaded for `requests`: earlier versions onto what the book knows, whole
    /// streams from nothing (then the pushes they owe or hold are offered).
    mutating func install(_ loaded: StreamHistories, for requests: [StreamID: HistoryRequest], at now: Timestamp) {
        for (stream, tokens) in loaded.invalidations {
            invalidTokens[stream, default: [:]].merge(tokens) { max($0, $1) }
        }
        for (stream, request) in requests where shards.delivers(stream) {
            let events = loaded.events[stream] ?? []
            if request.isWhole {
                reload(stream, from: events, at: now)
            } else if unreadable[stream] == nil {
                for stored in events {
                    guard fold(stored, at: now, owed: false) != nil else { break }
                }
            }
        }
    }

    /// Folds a stream's whole history again; when it folds, the stream is readable again and
    /// its owed and held pushes are offered.
    private mutating func reload(_ stream: StreamID, from events: [StoredEvent], at now: Timestamp) {
        var state: DeliveryState? = nil
        for stored in events {
            do {
                state = try DeliveryState(state, folding: stored.event, at: stored.position, by: lifecycle)
            } catch {
                let reason = "version \(stored.event.version) at position \(stored.position): \(error)"
                markUnreadable(stream, reason, owing: [], at: now)
                return
            }
        }
        guard let state else {
            markUnreadable(stream, "no events were loaded for it", owing: [], at: now)
            return
        }
        states[stream] = state
        resume(stream, from: events, leaving: state, at: now)
        if let owed = unreadable.removeValue(forKey: stream) {
            notices.append(.readable(stream, owed: owed.owed.count))
            for position in owed.owed {
                guard let stored = events.first(where: { $0.position == position }), let app = apps[stream.app]
                else { continue }
                deliver(stored, leaving: state, topic: app.topic, at: now)
            }
        }
        forgetIfDone(stream)
    }

    /// The stream cannot be folded: it is skipped (its pushes owed, the shard's cursor kept
    /// before them) and loaded again whole — at once the first time, then after a growing wait.
    mutating func markUnreadable(_ stream: StreamID, _ reason: String, owing owed: [Int64], at now: Timestamp) {
        states[stream] = nil
        guard var known = unreadable[stream] else {
            unreadable[stream] = UnreadableStream(reason: reason, owed: owed, failures: 0, retryAt: now)
            notices.append(.unreadable(stream, reason: reason))
            return
        }
        known.owed += owed
        known.reason = reason
        known.failures += 1
        known.retryAt = now + min(unreadableRetry * (1 << min(known.failures - 1, 10)), .seconds(3600))
        unreadable[stream] = known
        notices.append(.stillUnreadable(stream, reason: reason, retryAt: known.retryAt))
    }
}

/// A stream the book could not fold, and the pushes it owes (positions whose delivery is not
/// settled): the shard's cursor stays before the first of them.
struct UnreadableStream: Hashable, Sendable {
    var reason: String
    var owed: [Int64]
    var failures: Int
    var retryAt: Timestamp
}

/// What the worker logs for the book.
enum Notice: Hashable, Sendable {
    case unreadable(StreamID, reason: String)
    case stillUnreadable(StreamID, reason: String, retryAt: Timestamp)
    case readable(StreamID, owed: Int)
}

public import ActivityLifecycle
public import CanonicalJSON
import Postgres

/// One step of the history the caps govern: an activity opened or closed, or a cap set, with
/// the time its transaction committed. `liveline verify` replays these in commit order.
public struct CapHistoryEntry: Hashable, Sendable {
    /// A cap: an app's, the one every device of an app has, or the global one.
    public enum Cap: Hashable, Sendable, CustomStringConvertible {
        case app(AppID)
        case perDevice(AppID)
        case global

        public var description: String {
            switch self {
            case .app(let app): "the cap of app \(app)"
            case .perDevice(let app): "the per-device cap of app \(app)"
            case .global: "the global cap"
            }
        }
    }

    public enum Change: Hashable, Sendable {
        /// The activity's first event: it counts towards its app's, its device's and the
        /// global cap from here on.
        case opened(StreamID, device: DeviceID?)
        /// Its first `ended` or `dismissed` event: it no longer counts.
        case closed(StreamID)
        /// The cap's limit from here on; `nil` for no limit (only a per-device cap may have none).
        case capSet(Cap, limit: Int?)
    }

    /// When the change's transaction committed; `nil` when the database did not record it (the
    /// change committed while `track_commit_timestamp` was off). Entries without it come first.
    public let committedAt: Timestamp?
    public let change: Change

    public init(committedAt: Timestamp?, change: Change) {
        self.committedAt = committedAt
        self.change = change
    }
}

extension EventStore {
    /// Whether the database records the commit time of transactions
    /// (`track_commit_timestamp`), which puts the cap history in commit order.
    public func recordsCommitTimestamps() async throws -> Bool {
        try await withConnection { try CapHistoryQueries.recordsCommitTimestamps($0) }
    }

    /// Folds the cap history into `state`, in commit order, from one snapshot: first the limit
    /// of every cap as it was before its first recorded change, then the openings, closings and
    /// cap changes as they committed. Openings and closings are read through a cursor, a batch
    /// at a time, so memory stays that of one batch (and of `state`).
    ///
    /// Transactions that commit at the same microsecond cannot have waited for one another, so
    /// their order does not matter to the caps; they come in transaction order.
    ///
    /// `archived` are the openings and closings of archived streams, in commit order: they take
    /// their place among the live log's.
    public func foldCapHistory<State: Sendable>(
        into initial: State,
        archived: [CapHistoryEntry] = [],
        batchSize: Int = 10_000,
        _ update: @escaping @Sendable (inout State, CapHistoryEntry) -> Void
    ) async throws -> State {
        precondition(batchSize > 0, "a batch holds at least one entry")
        return try await withConnection { connection in
            try connection.transaction(isolation: .repeatableRead) { connection in
                var state = initial
                let changes = try CapHistoryQueries.capChanges(connection)
                for entry in try CapHistoryQueries.limitsBeforeChanges(changes, connection) { update(&state, entry) }
                let held = merged(changes.map(\.entry), archived)
                var next = held.startIndex
                try CapHistoryQueries.openCursorOnOpeningsAndClosings(connection)
                while true {
                    let batch = try CapHistoryQueries.fetch(batchSize, connection)
                    for entry in batch {
                        while next < held.endIndex, held[next].committedAt.precedesOrTies(entry.committedAt) {
                            update(&state, held[next])
                            next += 1
                        }
                        update(&state, entry)
                    }
                    if batch.count < batchSize { break }
                }
                try CapHistoryQueries.closeCursor(connection)
                for entry in held[next...] { update(&state, entry) }
                return state
            }
        }
    }
}

/// Two lists in commit order as one, `first`'s entry before `second`'s at the same time.
private func merged(_ first: [CapHistoryEntry], _ second: [CapHistoryEntry]) -> [CapHistoryEntry] {
    var result: [CapHistoryEntry] = []
    result.reserveCapacity(first.count + second.count)
    var (i, j) = (first.startIndex, second.startIndex)
    while i < first.endIndex || j < second.endIndex {
        if j == second.endIndex || (i < first.endIndex && first[i].committedAt.precedesOrTies(second[j].committedAt)) {
            result.append(first[i])
            i += 1
        } else {
            result.append(second[j])
            j += 1
        }
    }
    return result
}

extension Timestamp? {
    /// Order of commit times, where `nil` (not recorded) comes first.
    fileprivate func precedesOrTies(_ other: Timestamp?) -> Bool {
        switch (self, other) {
        case (nil, _): true
        case (_?, nil): false
        case (let mine?, let theirs?): mine <= theirs
        }
    }
}

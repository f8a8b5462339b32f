public import ActivityLifecycle
public import CanonicalJSON

/// An activity's events as the rows of `deliveries` name them: by position, with the push
/// token each registration brought (a push to the activity's own token records the
/// registration's position, not the token), wherever those rows are kept: the live table, or
/// the archive of a retired partition.
public struct DeliveredStream: Sendable {
    public let stream: StreamID
    /// Each event's version, by position.
    private let versions: [Int64: Int]
    /// The token each registration brought, by position, lowercased as it was sent; and the
    /// push-to-start token of a remote start, at its request's position.
    private let tokens: [Int64: String]
    /// When the stream's first event was recorded: none of its deliveries was recorded before.
    public let since: Timestamp

    /// `nil` for a stream without events.
    public init?(_ events: [StoredEvent]) {
        guard let first = events.first else { return nil }
        stream = first.stream
        since = first.recordedAt
        versions = Dictionary(events.map { ($0.position, $0.event.version) }) { first, _ in first }
        tokens = Dictionary(
            events.compactMap { stored in
                switch stored.event.payload {
                case .pushTokenChanged(let changed): (stored.position, changed.pushToken.lowercased())
                case .requested(let request):
                    request.remoteStart?.pushToStartToken.map { (stored.position, $0.lowercased()) }
                default: nil
                }
            }
        ) { first, _ in first }
    }

    /// The positions of its events, in order.
    public var positions: [Int64] { versions.keys.sorted() }

    /// The highest position of its events.
    public var lastPosition: Int64 { versions.keys.max() ?? 0 }

    /// The version of the event at `position`; `nil` when it is another stream's.
    public func version(at position: Int64) -> Int? {
        versions[position]
    }

    /// The token a delivery went to: as the row records it, or the one its registration brought;
    /// for a remote start's push (at its request's `position`), the push-to-start token it names.
    /// An archive keeps no row's token (docs/event-log.md#erasure): every one is found in the
    /// events, but a push recorded before pushes named their registration (migration 0025).
    public func deviceToken(recorded: String?, registeredAt tokenPosition: Int64?, position: Int64) -> String? {
        recorded ?? tokens[tokenPosition ?? position]
    }
}

extension DeliveryRecord.Outcome {
    /// The outcome a row of `deliveries` records; throws on one this version does not know.
    public init(stored: String) throws {
        guard let known = Self(rawValue: stored) else {
            throw EventStoreError.unreadableRow("deliveries: outcome \(stored)")
        }
        self = known
    }
}

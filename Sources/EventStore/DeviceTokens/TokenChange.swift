public import CanonicalJSON
import Postgres

/// One change of a device token's slot (a push-to-start token, a widget token, a control's), as
/// the slot's log of changes keeps it.
public struct TokenChange: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        /// A token given by the app backend: a first one, or a rotation (for a widget token, also
        /// the same token with other widgets).
        case registered
        /// Removed by the app backend.
        case removed
        /// APNs declared the token dead.
        case invalidated
    }

    public let kind: Kind
    /// The token registered or declared dead; `nil` for a removal.
    public let token: String?
    /// The widgets listed with a widget token's registration; `nil` for the other changes.
    public let widgets: [WidgetInfo]?
    /// APNs' status and reason, for an invalidation.
    public let status: Int?
    public let reason: String?
    /// Since when APNs holds the token dead, for an invalidation.
    public let invalidSince: Timestamp?
    public let changedAt: Timestamp

    public init(
        kind: Kind,
        token: String?,
        widgets: [WidgetInfo]? = nil,
        status: Int? = nil,
        reason: String? = nil,
        invalidSince: Timestamp? = nil,
        changedAt: Timestamp
    ) {
        self.kind = kind
        self.token = token
        self.widgets = widgets
        self.status = status
        self.reason = reason
        self.invalidSince = invalidSince
        self.changedAt = changedAt
    }
}

extension TokenChange {
    /// A row of `push_to_start_token_changes` or `reload_token_changes` (the first selects its
    /// `widgets` as NULL).
    init(row: PostgresRow) throws {
        let kind = try row.decode("change", as: String.self)
        guard let known = Kind(rawValue: kind) else {
            throw EventStoreError.unreadableRow("a token change \(kind)")
        }
        self.init(
            kind: known,
            token: try row.decode("token"),
            widgets: try row.decode("widgets", as: JSONB?.self).map { try WidgetInfo.list($0) },
            status: try row.decode("status"),
            reason: try row.decode("reason"),
            invalidSince: try row.decode("invalid_since", as: PostgresTimestamp?.self).map(Timestamp.init),
            changedAt: Timestamp(try row.decode("changed_at", as: PostgresTimestamp.self))
        )
    }
}

public import ActivityLifecycle
public import CanonicalJSON
import Postgres

/// Who made an administrative change, as the audit trail (`admin_changes`) records it.
public enum AdminActor: String, Sendable, CaseIterable {
    /// A request with the admin key.
    case adminAPI = "admin_api"
    /// `liveline apps …` or `liveline dev`.
    case commandLine = "command_line"
    /// A setting applied at startup (`LIVELINE_GLOBAL_MAX_OPEN`).
    case configuration
    /// The admin, signed in to the support console.
    case console
}

/// One entry of the audit trail of administrative changes.
public struct AdminChange: Hashable, Sendable, Encodable {
    public let id: Int64
    public let occurredAt: Timestamp
    /// An `AdminActor`'s raw value, or `sql:<role>` for a change made in plain SQL.
    public let actor: String
    /// `app.created`, `app.updated`, `key.issued`, `key.revoked`, `limits.updated`, `apns.set`,
    /// `apns.removed`, `channel.created`, `channel.deleted` or `content.revealed`.
    public let action: String
    public let app: AppID?
    /// The settings of a new app; `{"from": …, "to": …}` per changed setting; the key's id.
    public let details: JSONObject
}

extension EventStore {
    /// Runs an administrative change in a transaction that names its actor; triggers record it
    /// in `admin_changes` in the same transaction. A cap change can deadlock with an opening
    /// (see docs/event-log.md): the transaction the database rolls back is run again.
    func administering<T: Sendable>(
        _ actor: AdminActor,
        _ body: @escaping @Sendable (Connection) throws -> T
    ) async throws -> T {
        try await withConnection { connection in
            try Self.retryingDeadlocks {
                try connection.transaction { connection in
                    try AdminChangeQueries.nameActor(actor, connection)
                    return try body(connection)
                }
            }
        }
    }

    /// The audit trail, newest first: of one app (and the service-wide changes), or of all.
    public func adminChanges(of app: AppID? = nil, limit: Int) async throws -> [AdminChange] {
        try await withConnection { try AdminChangeQueries.adminChanges(of: app, limit: limit, $0) }
    }
}

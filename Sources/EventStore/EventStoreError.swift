public import ActivityLifecycle
public import Logging
import Postgres

/// Failures of the store that are not rejections by a rule. The database's own errors arrive
/// here too (`databaseUnavailable`, `databaseFailure`), so that no caller of the store handles
/// `PostgresError`.
public enum EventStoreError: Error, Hashable, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The activity's version was not the expected one: someone else appended first.
    case versionConflict(expected: Int, actual: Int?)
    /// The idempotency key was used before with a different request.
    case idempotencyKeyReused(key: String)
    /// No such app.
    case unknownApp(AppID)
    /// An app with this id exists already.
    case appExists(AppID)
    /// A stored row could not be read back (a bug or a hand-edited database).
    case unreadableRow(String)
    /// Another replay is running on the database.
    case replayInProgress
    /// A stream the state machine cannot fold (a hand-edited log).
    case corruptStream(CorruptionError)
    /// The app's stored secret (its APNs private key) does not open with the server's secret:
    /// `LIVELINE_SECRET_KEY` changed since it was stored, or the row was altered.
    case sealedUnderAnotherSecret(AppID)
    /// The database could not be reached, or the connection broke; trying again later may work.
    case databaseUnavailable(DatabaseFailure)
    /// The database refused or failed a statement, or no connection was free in time.
    case databaseFailure(DatabaseFailure)
    /// A write found no partition of `table` for its time: the partitions ahead ran out, because
    /// the job that creates them (`LogMaintenance`) has been failing or the clock jumped ahead.
    /// Nothing was written; the same write succeeds once the job has created the partition.
    case logPartitionMissing(table: String, DatabaseFailure)

    /// A database error at the store's boundary.
    init(_ error: PostgresError) {
        let failure = DatabaseFailure(
            summary: error.description,
            message: error.message,
            details: error.debugDescription
        )
        self =
            if error.isConnectionFailure {
                .databaseUnavailable(failure)
            } else if error.isMissingPartition, let table = error.table {
                .logPartitionMissing(table: table, failure)
            } else {
                .databaseFailure(failure)
            }
    }

    /// `error` as the store's public API throws it: a database error becomes the store's.
    static func sealed(_ error: any Error) -> any Error {
        (error as? PostgresError).map(EventStoreError.init) ?? error
    }

    /// Runs `body`, turning a database error into the store's: for the store's public API.
    static func sealing<T>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: () async throws -> T
    ) async throws -> T {
        do {
            return try await body()
        } catch let error as PostgresError {
            throw EventStoreError(error)
        }
    }

    public var description: String {
        switch self {
        case .versionConflict(let expected, let actual):
            "version conflict: expected version \(expected), the activity is at \(actual.map(String.init) ?? "nothing")"
        case .idempotencyKeyReused(let key):
            "idempotency key \"\(key)\" was already used with a different request"
        case .unknownApp(let app):
            "no app \(app)"
        case .appExists(let app):
            "an app \(app) exists already"
        case .unreadableRow(let reason):
            "unreadable stored row: \(reason)"
        case .replayInProgress:
            "another replay is running on this database; try again when it has finished"
        case .corruptStream(let corruption):
            "the log cannot be folded: \(corruption)"
        case .sealedUnderAnotherSecret(let app):
            "the APNs private key of app \(app) does not open with this LIVELINE_SECRET_KEY: "
                + "set the secret it was stored under, or set the app's credentials again"
        case .databaseUnavailable(let failure), .databaseFailure(let failure):
            "\(failure.summary): \(failure.message)"
        case .logPartitionMissing(let table, _):
            "the log has no partition of \(table) for now: the partitions ahead ran out "
                + "(is the maintenance job \"partitions\" failing? see /readyz)"
        }
    }

    public var debugDescription: String {
        switch self {
        case .databaseUnavailable(let failure), .databaseFailure(let failure), .logPartitionMissing(_, let failure):
            failure.details
        default: description
        }
    }
}

/// What the database said when it failed.
public struct DatabaseFailure: Hashable, Sendable {
    /// The kind of failure, safe to show to anyone (`database unavailable`).
    public let summary: String
    /// The database's or the driver's message, for operators.
    public let message: String
    /// Everything known (SQLSTATE, detail, hint, the statement), for logs.
    public let details: String
}

extension Logger {
    /// Logs a background step that failed and will be tried again: at `error`, or at `debug` when
    /// the database could not be reached — the pool logs the outage itself, once
    /// (`DatabaseOutage`), and a line per attempt would bury it.
    public func retrying(_ message: @autoclosure () -> Logger.Message, after error: any Error) {
        let level: Logger.Level =
            if case EventStoreError.databaseUnavailable = error { .debug } else { .error }
        log(level: level, message(), metadata: ["error": "\(String(reflecting: error))"])
    }
}

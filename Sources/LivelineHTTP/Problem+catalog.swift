import ActivityLifecycle
import CanonicalJSON
import EventStore
import HTTPTypes

/// Every problem the API answers, in one place: docs/api.md lists the same codes.
extension Problem {
    /// A command refused by a rule of the state machine or a cap.
    init(_ rejection: Rejection) {
        let status: HTTPResponse.Status =
            switch rejection {
            case .activityNotFound: .notFound
            case .dataTooLarge: .contentTooLarge
            case .invalidTimestamp: .unprocessableContent
            case .pushBudgetExhausted, .pushToStartBudgetExhausted: .tooManyRequests
            case .activityExists, .activityEnded, .activityDismissed, .outdatedUpdate, .targetMaximumExceeded,
                .globalMaximumExceeded, .deviceMaximumExceeded, .invalidTransition, .notDue, .pushToStartTokenMissing,
                .channelNotFound, .widgetReloadWithoutDevice:
                .conflict
            }
        var headers: HTTPFields = [:]
        switch rejection {
        case .pushBudgetExhausted(_, let retryAfter), .pushToStartBudgetExhausted(_, _, let retryAfter):
            headers[.retryAfter] = String(retryAfter.wholeSecondsRoundedUp)
        default:
            break
        }
        self.init(
            status,
            code: rejection.code,
            detail: rejection.description,
            details: rejection.details,
            headers: headers
        )
    }

    /// A failure of the store that is the caller's to fix, or the database's.
    init?(_ error: EventStoreError) {
        switch error {
        case .versionConflict(let expected, let actual?):
            self.init(
                .preconditionFailed,
                code: "version_mismatch",
                detail: "If-Match named version \(expected), but the activity is at version \(actual). "
                    + "Read it again and retry on the new version.",
                details: ["expected": .number(JSONNumber(expected)), "actual": .number(JSONNumber(actual))]
            )
        case .versionConflict(_, nil):
            self.init(Rejection.activityNotFound)
        case .idempotencyKeyReused(let key):
            self.init(
                .unprocessableContent,
                code: "idempotency_key_reused",
                detail: "The Idempotency-Key \"\(key)\" was already used with a different request. "
                    + "Use a new key for a new request.",
                details: ["idempotencyKey": .string(key)]
            )
        case .unknownApp(let app):
            self = .appNotFound(app)
        case .appExists(let app):
            self = .appExists(app)
        case .databaseUnavailable:
            self = .databaseUnavailable
        case .logPartitionMissing(let table, _):
            self = .logPartitionMissing(table)
        case .unreadableRow, .replayInProgress, .corruptStream, .databaseFailure, .sealedUnderAnotherSecret:
            return nil
        }
    }

    static func malformedJSON(_ reason: String) -> Problem {
        Problem(.badRequest, code: "malformed_json", detail: "The body is not valid JSON: \(reason)")
    }

    /// A well-formed request that breaks the API's rules; `field` names where, as a JSON pointer.
    static func invalidRequest(_ detail: String, field: String? = nil) -> Problem {
        Problem(
            .badRequest,
            code: "invalid_request",
            detail: detail,
            details: field.map { ["field": .string($0)] } ?? [:]
        )
    }

    static func unauthorized(_ detail: String) -> Problem {
        Problem(
            .unauthorized,
            code: "unauthorized",
            detail: detail,
            headers: [.wwwAuthenticate: "Bearer realm=\"liveline\""]
        )
    }

    static func unusableAPNsKey(_ detail: String, field: String) -> Problem {
        Problem(.unprocessableContent, code: "invalid_apns_key", detail: detail, details: ["field": .string(field)])
    }

    /// A reload request the schema admits that does not say what or where to reload.
    static func invalidReload(_ detail: String, field: String) -> Problem {
        Problem(.unprocessableContent, code: "invalid_reload", detail: detail, details: ["field": .string(field)])
    }

    static func forbidden(_ detail: String) -> Problem {
        Problem(.forbidden, code: "forbidden", detail: detail)
    }

    static func routeNotFound(_ method: HTTPRequest.Method, _ path: String) -> Problem {
        Problem(
            .notFound,
            code: "not_found",
            detail: "No route \(method) \(path). The routes are listed in /openapi.yaml."
        )
    }

    static func methodNotAllowed(
        _ method: HTTPRequest.Method,
        _ path: String,
        allowed: [HTTPRequest.Method]
    ) -> Problem {
        let methods = allowed.map(\.rawValue).joined(separator: ", ")
        return Problem(
            .methodNotAllowed,
            code: "method_not_allowed",
            detail: "\(path) does not take \(method); it takes \(methods).",
            details: ["allowed": .array(allowed.map { .string($0.rawValue) })],
            headers: [.allow: methods]
        )
    }

    static func appNotFound(_ app: AppID) -> Problem {
        Problem(
            .notFound,
            code: "app_not_found",
            detail: "No app \"\(app)\".",
            details: ["appId": .string(app.rawValue)]
        )
    }

    static func appExists(_ app: AppID) -> Problem {
        Problem(
            .conflict,
            code: "app_exists",
            detail: "An app \"\(app)\" already exists.",
            details: ["appId": .string(app.rawValue)]
        )
    }

    static func pushToStartTokenNotFound(_ slot: PushToStartSlot) -> Problem {
        Problem(
            .notFound,
            code: "push_to_start_token_not_found",
            detail: "The device \"\(slot.device)\" has no push-to-start token for \(slot.activityType); register one "
                + "with PUT /v1/devices/\(slot.device)/push-to-start-tokens/{activityType}.",
            details: ["deviceId": .string(slot.device.rawValue), "activityType": .string(slot.activityType)]
        )
    }

    static func reloadTokenNotFound(_ slot: ReloadTokenSlot) -> Problem {
        switch slot.kind {
        case .widgets:
            Problem(
                .notFound,
                code: "widget_push_token_not_found",
                detail: "The device \"\(slot.device)\" has no widget push token; register one with "
                    + "PUT /v1/devices/\(slot.device)/widget-push-token.",
                details: ["deviceId": .string(slot.device.rawValue)]
            )
        case .control(let kind):
            Problem(
                .notFound,
                code: "control_push_token_not_found",
                detail: "The device \"\(slot.device)\" has no push token for the control \(kind); register one "
                    + "with PUT /v1/devices/\(slot.device)/control-push-tokens/{controlKind}.",
                details: ["deviceId": .string(slot.device.rawValue), "controlKind": .string(kind)]
            )
        }
    }

    /// An erasure refused: a device known nowhere, or activities still to dismiss.
    init(_ refusal: ErasureRefusal) {
        switch refusal {
        case .deviceNotFound(let device):
            self.init(
                .notFound,
                code: "device_not_found",
                detail: "The app has no activity, token, reload or archive of the device \"\(device)\".",
                details: ["deviceId": .string(device.rawValue)]
            )
        case .notDismissed(let activities):
            self.init(
                .conflict,
                code: "activity_not_dismissed",
                detail: "Only dismissed activities are erased: end "
                    + activities.map { "\"\($0)\"" }.joined(separator: ", ")
                    + " with dismissal immediate first.",
                details: ["activityIds": .array(activities.map { .string($0.rawValue) })]
            )
        }
    }

    static let invalidErasure = Problem(
        .unprocessableContent,
        code: "invalid_erasure",
        detail: "Name what to erase: an activityId or a deviceId, one of the two."
    )

    static func erasureNotFound(_ id: Int64) -> Problem {
        Problem(
            .notFound,
            code: "erasure_not_found",
            detail: "The app has no erasure \(id).",
            details: ["erasureId": .number(JSONNumber(id))]
        )
    }

    static func reloadNotFound(_ id: Int64) -> Problem {
        Problem(
            .notFound,
            code: "reload_not_found",
            detail: "The app has no reload request \(id).",
            details: ["reloadId": .number(JSONNumber(id))]
        )
    }

    static func apnsCredentialsNotFound(_ app: AppID) -> Problem {
        Problem(
            .notFound,
            code: "apns_credentials_not_found",
            detail: "The app \"\(app)\" has no APNs credentials; set them with PUT /v1/admin/apps/\(app)/apns.",
            details: ["appId": .string(app.rawValue)]
        )
    }

    static let broadcastCannotStart = Problem(
        .unprocessableContent,
        code: "broadcast_cannot_start",
        detail: "A broadcast cannot start an activity: a remote start goes to one device's push-to-start token. "
            + "Send its deviceId; the device subscribes the activity to the channel, and the channel carries its "
            + "updates.",
        details: ["field": .string("/deviceId")]
    )

    static let secretKeyNotConfigured = Problem(
        .serviceUnavailable,
        code: "secret_key_not_configured",
        detail: "The server has no LIVELINE_SECRET_KEY to seal the private key with, so it stores none; "
            + "set it (\(SecretKey.howToMake)) and restart."
    )

    static func keyNotFound(_ keyID: String) -> Problem {
        Problem(.notFound, code: "key_not_found", detail: "The app has no key \(keyID).")
    }

    static func requestTooLarge(limit: Int) -> Problem {
        Problem(
            .contentTooLarge,
            code: "request_too_large",
            detail: "The body is over \(limit) bytes, the most a request may carry.",
            details: ["limit": .number(JSONNumber(limit))]
        )
    }

    static func unsupportedMediaType(_ received: String?) -> Problem {
        Problem(
            .unsupportedMediaType,
            code: "unsupported_media_type",
            detail: "Send the body as Content-Type: application/json"
                + (received.map { "; got \($0)." } ?? "; the request had no Content-Type.")
        )
    }

    static func notAcceptable(_ accept: String?) -> Problem {
        Problem(
            .notAcceptable,
            code: "not_acceptable",
            detail: "Accept: \(accept ?? "") allows none of the content types this operation answers with; "
                + "they are listed in /openapi.yaml (JSON operations answer application/json)."
        )
    }

    static func positionBeyondLog(_ position: Int64, end: Int64) -> Problem {
        Problem(
            .conflict,
            code: "position_beyond_log",
            detail: "Position \(position) is beyond the end of this log (position \(end)): the events read "
                + "before came from a log this database does not have (a restore or a failover?). "
                + "Read again from a position at or below \(end).",
            details: ["position": .number(JSONNumber(position)), "end": .number(JSONNumber(end))]
        )
    }

    static let databaseUnavailable = Problem(
        .serviceUnavailable,
        code: "database_unavailable",
        detail: "The database is not reachable; nothing was changed. Retry shortly."
    )

    /// The partitions ahead ran out. The job that creates them runs every minute, so a retry
    /// every 30 s succeeds within a minute of the job's first success.
    static func logPartitionMissing(_ table: String) -> Problem {
        Problem(
            .serviceUnavailable,
            code: "log_partition_missing",
            detail: "The log has no partition of \(table) for now, so nothing was written: the server's "
                + "partition maintenance is behind (see /readyz). Retry shortly; the same Idempotency-Key is safe.",
            details: ["table": .string(table)],
            headers: [.retryAfter: "30"]
        )
    }

    static let internalError = Problem(
        .internalServerError,
        code: "internal_error",
        detail:
            "Something went wrong on Liveline's side; it has been logged. A retry with the same Idempotency-Key is safe."
    )
}

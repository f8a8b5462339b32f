import ActivityLifecycle
import CanonicalJSON
import EventStore
import Foundation

/// The API's JSON shapes (generated from openapi.yaml) made from the store's values.
extension Components.Schemas.Activity {
    init(_ stored: StoredActivity) {
        let activity = stored.activity
        self.init(
            activityId: stored.stream.activity,
            activityType: activity.activityType,
            state: activity.state,
            version: activity.version,
            attributes: activity.attributes,
            contentState: activity.content.contentState,
            staleDate: activity.content.staleDate,
            relevanceScore: activity.content.relevanceScore,
            startDate: activity.startDate,
            pushType: activity.pushType,
            style: activity.style,
            deviceId: activity.deviceID,
            pushToken: activity.pushToken,
            requestedAt: activity.requestedAt,
            activatedAt: activity.activatedAt,
            endedAt: activity.endedAt,
            endReason: activity.endReason,
            dismissalDate: activity.dismissalDate,
            dismissedAt: activity.dismissedAt,
            lastTimestamp: activity.lastTimestamp,
            nextDeadline: stored.nextDeadline.map {
                Components.Schemas.Deadline(kind: .init(rawValue: $0.kind.rawValue)!, due: $0.due)
            }
        )
    }
}

extension Components.Schemas.Event {
    init(_ stored: StoredEvent) {
        self.init(
            position: stored.position,
            activityId: stored.stream.activity,
            version: stored.event.version,
            _type: stored.event.type,
            cause: stored.event.cause,
            occurredAt: stored.event.occurredAt,
            recordedAt: stored.recordedAt,
            data: stored.data
        )
    }
}

extension Components.Schemas.App {
    init(_ summary: AppSummary) {
        self.init(
            appId: summary.app,
            bundleId: summary.settings.bundleID,
            maxOpen: summary.settings.maxOpen,
            maxOpenPerDevice: summary.settings.maxOpenPerDevice,
            priorityBudgetPerHour: summary.settings.priorityBudgetPerHour,
            frequentUpdates: summary.settings.frequentUpdates,
            pushToStartBudgetPerHour: summary.settings.pushToStartBudgetPerHour,
            widgetReloadIntervalSeconds: summary.settings.widgetReloadIntervalSeconds,
            controlReloadIntervalSeconds: summary.settings.controlReloadIntervalSeconds,
            openActivities: summary.openActivities
        )
    }
}

/// `ETag` and `If-Match`: the activity's stream version as a strong entity tag, `"3"`.
enum EntityTag {
    static func of(_ stored: StoredActivity) -> String { "\"\(stored.activity.version)\"" }

    /// The version `If-Match` names; `*` (any version) names none.
    static func version(in ifMatch: String?) throws -> Int? {
        guard let ifMatch = ifMatch.map({ String($0.trimmingHTTPWhitespace) }), ifMatch != "*" else { return nil }
        let unquoted =
            ifMatch.count >= 2 && ifMatch.hasPrefix("\"") && ifMatch.hasSuffix("\"")
            ? ifMatch.dropFirst().dropLast() : ifMatch[...]
        // 1–18 digits, as the document's pattern says: no sign, and never past Int64.
        guard (1...18).contains(unquoted.utf8.count), unquoted.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let version = Int(unquoted)
        else {
            throw Problem.invalidRequest(
                "If-Match must be the activity's ETag, such as \"3\"; got \(ifMatch).",
                field: "If-Match"
            )
        }
        return version
    }
}

/// The opaque `cursor` of activity pages: the last activity's request time and id.
enum PageCursor {
    static func token(_ cursor: ActivityCursor) -> String {
        let text = "\(cursor.requestedAt.microsecondsSince1970):\(cursor.activityID.rawValue)"
        return Data(text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func cursor(_ token: String) throws -> ActivityCursor {
        var base64 = token.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let text = String(data: data, encoding: .utf8),
            let colon = text.firstIndex(of: ":"), let micros = Int64(text[..<colon]),
            let activity = ActivityID(rawValue: String(text[text.index(after: colon)...]))
        else {
            throw Problem.invalidRequest(
                "The cursor is not one this API gave; pass the nextCursor of the previous page.",
                field: "cursor"
            )
        }
        return ActivityCursor(requestedAt: Timestamp(microsecondsSince1970: micros), activityID: activity)
    }
}

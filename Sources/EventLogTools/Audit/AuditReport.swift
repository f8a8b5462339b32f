import ActivityLifecycle
import CanonicalJSON
import Foundation

/// An activity's audit as a person reads it (an aligned table) or a program does (JSON).
public enum AuditReport {
    public static func table(_ entries: [AuditEntry]) -> String {
        let header = ["POSITION", "V", "OCCURRED AT", "EVENT", "BY", "STATE", "SUMMARY"]
        let rows = entries.flatMap { entry in
            let event = [
                entry.position.map(String.init) ?? "-",
                entry.version.map(String.init) ?? "-",
                entry.occurredAt.description,
                entry.type,
                entry.cause?.rawValue ?? "-",
                state(entry),
                entry.summary,
            ]
            // Each push of the event, under it.
            let pushes = entry.deliveries.map { delivery in
                ["", "", delivery.attemptedAt.description, "  push #\(delivery.attempt)", "apns", "", delivery.summary]
            }
            // A token the event brought that APNs declared dead, under it.
            let death = entry.token?.invalidated.map { dead in
                [
                    "", "", dead.recordedAt.description, "  token dead", "apns", "",
                    "\(entry.token!.kind) token …\(entry.token!.token.suffix(8)): \(dead.status) \(dead.reason), "
                        + "dead since \(dead.invalidSince)",
                ]
            }
            // The widget reload it asked for, once its push was settled.
            let reload = entry.reload.map { reload in
                ["", "", reload.requestedAt.description, "  widget reload", "liveline", "", reload.summary]
            }
            return [event] + pushes + (death.map { [$0] } ?? []) + (reload.map { [$0] } ?? [])
        }
        let widths = header.indices.map { column in
            ([header] + rows).map { $0[column].count }.max() ?? 0
        }
        return ([header] + rows).map { row in
            row.enumerated().map { column, text in
                column == row.count - 1 ? text : text.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n") + "\n"
    }

    public static func json(_ entries: [AuditEntry]) throws -> String {
        try prettyJSON(entries) + "\n"
    }

    private static func state(_ entry: AuditEntry) -> String {
        if let problem = entry.problem { return "corrupt: \(problem)" }
        guard entry.position != nil else { return "" }
        guard let after = entry.stateAfter else { return "?" }
        return (entry.stateBefore.map { "\($0.rawValue) → " } ?? "→ ") + after.rawValue
    }
}

public import ActivityLifecycle
public import CanonicalJSON
public import Delivery
public import EventStore

/// One line of an activity's audit: an event of its stream, with the state before and after it,
/// or a command that was refused.
public struct AuditEntry: Hashable, Sendable, Encodable {
    /// The event's position in the log; `nil` for a refused command.
    public let position: Int64?
    public let version: Int?
    public let occurredAt: Timestamp
    public let recordedAt: Timestamp?
    /// The event type, or `refused <command>`.
    public let type: String
    /// `app`, `device` or `system`; the cause of a refused command is not recorded.
    public let cause: Cause?
    public let stateBefore: ActivityState?
    /// `nil` when the event could not be folded (see `problem`) or the command was refused.
    public let stateAfter: ActivityState?
    /// What mattered in it, for people: content, alert, priority, dismissal, refusal code.
    public let summary: String
    /// The event's `data`, or the refusal's details.
    public let data: JSONObject
    /// Why the state machine could not have produced this event (corruption), if so.
    public let problem: String?
    /// What became of the event's push, attempt by attempt, oldest first (SPEC §7).
    public let deliveries: [AuditDelivery]
    /// The token the event brought (a remote start's push-to-start token, a push token), and
    /// whether APNs declared it dead.
    public let token: AuditToken?
    /// The widget reload the event asked for, once its push was settled.
    public let reload: AuditReload?

    public init(
        position: Int64?,
        version: Int?,
        occurredAt: Timestamp,
        recordedAt: Timestamp?,
        type: String,
        cause: Cause?,
        stateBefore: ActivityState?,
        stateAfter: ActivityState?,
        summary: String,
        data: JSONObject,
        problem: String?,
        deliveries: [AuditDelivery] = [],
        token: AuditToken? = nil,
        reload: AuditReload? = nil
    ) {
        self.position = position
        self.version = version
        self.occurredAt = occurredAt
        self.recordedAt = recordedAt
        self.type = type
        self.cause = cause
        self.stateBefore = stateBefore
        self.stateAfter = stateAfter
        self.summary = summary
        self.data = data
        self.problem = problem
        self.deliveries = deliveries
        self.token = token
        self.reload = reload
    }
}

/// The widget reload an event asked of the activity's device: its request, and where its devices
/// stand.
public struct AuditReload: Hashable, Sendable, Encodable {
    public let reloadId: Int64
    public let requestedAt: Timestamp
    public let widgetKinds: [String]?
    public let targets: Int
    /// Devices by their latest outcome.
    public let devices: [String: Int]

    init(_ status: ReloadStatus) {
        reloadId = status.reload.id
        requestedAt = status.reload.requestedAt
        widgetKinds = status.reload.target.widgetKinds
        targets = status.reload.targets
        devices = status.devices
    }

    /// `reload 42 to 1 device: delivered 1`.
    public var summary: String {
        let outcomes = devices.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return "reload \(reloadId) to \(targets) device\(targets == 1 ? "" : "s")"
            + (widgetKinds.map { " (widgets \($0.joined(separator: ", ")))" } ?? "")
            + (outcomes.isEmpty ? "" : ": \(outcomes)")
    }
}

/// A link of the activity's token lineage, on the event that brought it.
public struct AuditToken: Hashable, Sendable, Encodable {
    /// `push_to_start` or `push`.
    public let kind: String
    public let token: String
    public let invalidated: Invalidated?

    public struct Invalidated: Hashable, Sendable, Encodable {
        public let status: Int
        public let reason: String
        public let invalidSince: Timestamp
        public let recordedAt: Timestamp
    }

    init(_ link: TokenLineage.Link) {
        kind = link.kind.rawValue
        token = link.token
        invalidated = link.invalidation.map { death in
            Invalidated(
                status: death.status,
                reason: death.reason,
                invalidSince: death.invalidSince,
                recordedAt: death.recordedAt
            )
        }
    }
}

/// One attempt to send an event's push, or a decision not to send it.
public struct AuditDelivery: Hashable, Sendable, Encodable {
    public let outcome: String
    public let attempt: Int
    public let attemptedAt: Timestamp
    public let status: Int?
    public let reason: String?
    public let latencyMs: Double?
    public let apnsId: String?
    public let deviceToken: String?
    /// The channel of a broadcast.
    public let channelId: String?

    init(_ record: DeliveryRecord) {
        outcome = record.outcome.rawValue
        attempt = record.attempt
        attemptedAt = record.attemptedAt
        status = record.status
        reason = record.reason
        latencyMs = record.latency.map { Double($0.microseconds) / 1000 }
        apnsId = record.apnsID
        deviceToken = record.deviceToken
        channelId = record.channelID
    }

    /// The attempt in a few words: `delivered (200, 3.1 ms)`, `retrying (503 ServiceUnavailable)`.
    var summary: String {
        let answer = [status.map(String.init), reason].compactMap { $0 }.joined(separator: " ")
        let latency = latencyMs.map { "\(($0 * 10).rounded() / 10) ms" }
        let details = [answer.isEmpty ? nil : answer, latency].compactMap { $0 }.joined(separator: ", ")
        return outcome + (details.isEmpty ? "" : " (\(details))")
    }
}

/// An activity's timeline, built from its stream and its recorded refusals, folding each event
/// through the state machine as replay does.
public enum AuditTimeline {
    /// - Parameters:
    ///   - deliveries: the activity's deliveries (any order); each shows under its event.
    ///   - lineage: its tokens; each shows on the event that brought it.
    ///   - reloads: the widget reloads its events asked for; each shows on its event.
    ///   - maskingContent: whether content values are masked (`ContentMask`), in the summaries
    ///     and the data alike.
    public static func build(
        events: [StoredEvent],
        rejections: [RecordedRejection],
        deliveries: [DeliveryRecord] = [],
        lineage: TokenLineage? = nil,
        reloads: [ReloadStatus] = [],
        lifecycle: Lifecycle,
        maskingContent: Bool = false
    ) -> [AuditEntry] {
        let asked = Dictionary(reloads.compactMap { status in status.version.map { ($0, AuditReload(status)) } }) {
            first,
            _ in first
        }
        let tokens = Dictionary((lineage?.links ?? []).map { ($0.version, AuditToken($0)) }) { first, _ in first }
        let pushes = Dictionary(grouping: deliveries, by: \.position).mapValues { records in
            records.sorted { ($0.attemptedAt, $0.attempt) < ($1.attemptedAt, $1.attempt) }.map(AuditDelivery.init)
        }
        var entries: [AuditEntry] = []
        var activity: Activity?
        var corrupt = false
        for stored in events {
            let before = activity?.state
            var problem: String?
            if !corrupt {
                do {
                    activity = try lifecycle.evolve(activity, with: stored.event)
                } catch {
                    problem = error.reason
                    corrupt = true
                }
            }
            entries.append(
                AuditEntry(
                    position: stored.position,
                    version: stored.event.version,
                    occurredAt: stored.event.occurredAt,
                    recordedAt: stored.recordedAt,
                    type: stored.event.type.rawValue,
                    cause: stored.event.cause,
                    stateBefore: corrupt && problem == nil ? nil : before,
                    stateAfter: corrupt ? nil : activity?.state,
                    summary: summary(of: stored.event.payload, maskingContent: maskingContent),
                    data: maskingContent ? ContentMask.mask(stored.data) : stored.data,
                    problem: problem,
                    deliveries: pushes[stored.position] ?? [],
                    token: tokens[stored.event.version],
                    reload: asked[stored.event.version]
                )
            )
        }
        for rejection in rejections {
            entries.append(
                AuditEntry(
                    position: nil,
                    version: nil,
                    occurredAt: rejection.occurredAt,
                    recordedAt: nil,
                    type: "refused \(rejection.command)",
                    cause: nil,
                    stateBefore: nil,
                    stateAfter: nil,
                    summary: rejection.code,
                    data: JSONObject(rejection.details),
                    problem: nil
                )
            )
        }
        // In time order; at one instant, events before refusals, events in stream order.
        return entries.enumerated().sorted { left, right in
            (left.element.occurredAt, left.element.position == nil ? 1 : 0, left.offset)
                < (right.element.occurredAt, right.element.position == nil ? 1 : 0, right.offset)
        }.map(\.element)
    }

    static func summary(of payload: EventPayload, maskingContent: Bool = false) -> String {
        func content(_ content: ActivityContent) -> String {
            Self.content(content, masked: maskingContent)
        }
        switch payload {
        case .requested(let requested):
            return [
                "\(requested.activityType)", content(requested.content),
                requested.startDate.map { "starts \($0)" }, requested.deviceID.map { "device \($0)" },
                requested.remoteStart?.pushToStartToken.map { "remote start to push-to-start token …\($0.suffix(8))" },
            ].compactMap { $0 }.joined(separator: ", ")
        case .started:
            return "start date reached"
        case .updated(let updated):
            return [
                content(updated.content),
                updated.alert.map { "alert \"\(maskingContent ? Redaction.masked : $0.title)\"" },
                "priority \(updated.priority.rawValue)" + (updated.downgraded ? " (downgraded: budget spent)" : ""),
                updated.widgetReload.map(widgetReload),
            ].compactMap { $0 }.joined(separator: ", ")
        case .becameStale:
            return "stale date passed"
        case .ended(let ended):
            return [
                ended.reason.rawValue, ended.content.map(content),
                "dismissal \(ended.dismissalPolicy.rawValue) at \(ended.dismissalDate)",
                ended.widgetReload.map(widgetReload),
            ].compactMap { $0 }.joined(separator: ", ")
        case .dismissed(let dismissed):
            return dismissed.reason.rawValue
        case .pushTokenChanged(let changed):
            return "push token …\(changed.pushToken.suffix(8))"
        case .startUnconfirmed(let flag):
            return [
                "no push token by \(flag.tokenDueBy) (APNs accepted the start at \(flag.acceptedAt))",
                "\(flag.unconfirmedInARow) unconfirmed in a row to push-to-start token …\(flag.pushToStartToken.suffix(8))",
                flag.tokenSuspect ? "token suspect" : nil,
            ].compactMap { $0 }.joined(separator: ", ")
        }
    }

    private static func widgetReload(_ reload: WidgetReload) -> String {
        "widget reload asked" + (reload.widgetKinds.map { " (\($0.joined(separator: ", ")))" } ?? "")
    }

    private static func content(_ content: ActivityContent, masked: Bool) -> String {
        let state =
            masked ? JSONObject(content.contentState.members.mapValues(Redaction.hidingValues)) : content.contentState
        let json = String(decoding: state.canonicalJSON, as: UTF8.self)
        let shown = json.count > 60 ? json.prefix(59) + "…" : Substring(json)
        return "content \(shown)" + (content.staleDate.map { ", stale at \($0)" } ?? "")
    }
}

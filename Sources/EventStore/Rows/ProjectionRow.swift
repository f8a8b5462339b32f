import ActivityLifecycle

/// One row of `activities`, as the JSON that `to_jsonb` reads and `jsonb_populate_record`
/// writes: the one place that maps an `Activity` to its columns.
struct ProjectionRow: Codable {
    var app_id: AppID
    var activity_id: ActivityID
    var state: ActivityState
    var version: Int
    var activity_type: String
    var attributes: JSONObject
    var content_state: JSONObject
    var stale_date: Timestamp?
    var relevance_score: RelevanceScore?
    var push_type: PushType?
    var push_token: String?
    var device_id: DeviceID?
    var start_date: Timestamp?
    var last_timestamp: Timestamp?
    var requested_at: Timestamp
    var activated_at: Timestamp?
    var ended_at: Timestamp?
    var dismissed_at: Timestamp?
    var dismissal_date: Timestamp?
    var next_deadline_at: Timestamp?
    var next_deadline_kind: Deadline.Kind?
    var last_event_at: Timestamp
    var style: ActivityStyle?
    var end_reason: EndReason?
    var priority_updates: [Timestamp]
    /// Filled in by the database: the stripes of the app's and the global count the activity holds.
    var app_stripe: Int?
    var global_stripe: Int?

    init(_ stored: StoredActivity) {
        let activity = stored.activity
        app_id = stored.stream.app
        activity_id = stored.stream.activity
        state = activity.state
        version = activity.version
        activity_type = activity.activityType
        attributes = activity.attributes
        content_state = activity.content.contentState
        stale_date = activity.content.staleDate
        relevance_score = activity.content.relevanceScore
        push_type = activity.pushType
        push_token = activity.pushToken
        device_id = activity.deviceID
        start_date = activity.startDate
        last_timestamp = activity.lastTimestamp
        requested_at = activity.requestedAt
        activated_at = activity.activatedAt
        ended_at = activity.endedAt
        dismissed_at = activity.dismissedAt
        dismissal_date = activity.dismissalDate
        next_deadline_at = stored.nextDeadline?.due
        next_deadline_kind = stored.nextDeadline?.kind
        last_event_at = activity.lastEventAt
        style = activity.style
        end_reason = activity.endReason
        priority_updates = activity.recentHighPriorityUpdates
        app_stripe = nil
        global_stripe = nil
    }

    var stored: StoredActivity {
        StoredActivity(
            stream: StreamID(app: app_id, activity: activity_id),
            activity: Activity(
                state: state,
                version: version,
                activityType: activity_type,
                attributes: attributes,
                content: ActivityContent(
                    contentState: content_state,
                    staleDate: stale_date,
                    relevanceScore: relevance_score
                ),
                startDate: start_date,
                pushType: push_type,
                style: style,
                deviceID: device_id,
                pushToken: push_token,
                requestedAt: requested_at,
                activatedAt: activated_at,
                endedAt: ended_at,
                endReason: end_reason,
                dismissedAt: dismissed_at,
                dismissalDate: dismissal_date,
                lastTimestamp: last_timestamp,
                lastEventAt: last_event_at,
                recentHighPriorityUpdates: priority_updates
            ),
            nextDeadline: next_deadline_kind.flatMap { kind in next_deadline_at.map { Deadline(kind: kind, due: $0) } }
        )
    }
}

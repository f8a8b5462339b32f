-- A step of every append: the projection rows of the appends to existing activities
-- (`p_appended`, command numbers), written at the row addresses the append locked (`p_tids`, per
-- command). A closing (open change -1) gives up its stripes; the others keep theirs.
CREATE OR REPLACE FUNCTION liveline_update_projections(
    p_appended integer[],
    p_tids tid[],
    p_rows jsonb[],
    p_open_changes integer[]
) RETURNS void
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    UPDATE activities AS a SET
        (state, version, activity_type, attributes, content_state, stale_date, relevance_score,
         push_type, push_token, device_id, start_date, last_timestamp, requested_at, activated_at,
         ended_at, dismissed_at, dismissal_date, next_deadline_at, next_deadline_kind, last_event_at,
         style, end_reason, priority_updates, app_stripe, global_stripe)
        = (r.state, r.version, r.activity_type, r.attributes, r.content_state, r.stale_date, r.relevance_score,
           r.push_type, r.push_token, r.device_id, r.start_date, r.last_timestamp, r.requested_at, r.activated_at,
           r.ended_at, r.dismissed_at, r.dismissal_date, r.next_deadline_at, r.next_deadline_kind, r.last_event_at,
           r.style, r.end_reason, r.priority_updates,
           CASE WHEN p_open_changes[p.i] = -1 THEN NULL ELSE a.app_stripe END,
           CASE WHEN p_open_changes[p.i] = -1 THEN NULL ELSE a.global_stripe END)
        FROM unnest(p_appended) AS p(i), LATERAL jsonb_populate_record(NULL::activities, p_rows[p.i]) AS r
        WHERE a.ctid = p_tids[p.i];
END
$$;
GRANT EXECUTE ON ROUTINE liveline_update_projections TO liveline_service;

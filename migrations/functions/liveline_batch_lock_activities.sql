-- A step of `liveline_append_batch`: locks the batch's existing activities (those of commands that
-- expect a version above 0) in key order, the first of the locks every batch and single command
-- takes in one shared order. Returns, per command in batch order, its activity's version, row
-- address, the time its stream began (its events' partition) and the stripes it holds now (NULL
-- for an opening, or when the activity does not exist). Each lock is a lookup by key (LATERAL),
-- whatever the planner thinks of the table's size.
CREATE OR REPLACE FUNCTION liveline_batch_lock_activities(
    p_app_ids text[],
    p_activity_ids text[],
    p_expected_versions integer[],
    OUT versions integer[],
    OUT tids tid[],
    OUT stream_recorded_ats timestamptz[],
    OUT app_stripes smallint[],
    OUT global_stripes smallint[]
)
LANGUAGE plpgsql AS $$
BEGIN
    SELECT array_agg(l.version ORDER BY c.n), array_agg(l.tid ORDER BY c.n), array_agg(l.stream_recorded_at ORDER BY c.n),
           array_agg(l.app_stripe ORDER BY c.n), array_agg(l.global_stripe ORDER BY c.n)
        INTO versions, tids, stream_recorded_ats, app_stripes, global_stripes
        FROM (SELECT * FROM unnest(p_app_ids, p_activity_ids, p_expected_versions) WITH ORDINALITY
                ORDER BY 1, 2) AS c(app_id, activity_id, version, n)
        LEFT JOIN LATERAL (SELECT a.version, a.ctid AS tid, a.stream_recorded_at, a.app_stripe, a.global_stripe
            FROM activities a
            WHERE c.version > 0 AND a.app_id = c.app_id AND a.activity_id = c.activity_id FOR UPDATE) AS l ON true;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_batch_lock_activities TO liveline_service;

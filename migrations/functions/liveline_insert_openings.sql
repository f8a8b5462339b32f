-- A step of every append that opens activities: the projection rows of the admitted openings
-- (`p_opened`, command numbers), each with the app and global stripes it took
-- (`liveline_admit_opening`, or `liveline_batch_admit_together`); their streams begin now.
CREATE OR REPLACE FUNCTION liveline_insert_openings(
    p_opened integer[],
    p_app_stripes smallint[],
    p_global_stripes smallint[],
    p_rows jsonb[]
) RETURNS void
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    INSERT INTO activities
        SELECT r.* FROM unnest(p_opened, p_app_stripes, p_global_stripes) AS o(i, app_stripe, global_stripe),
            LATERAL jsonb_populate_record(NULL::activities, p_rows[o.i]
                || jsonb_build_object('app_stripe', o.app_stripe, 'global_stripe', o.global_stripe,
                    'stream_recorded_at', now())) AS r;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_insert_openings TO liveline_service;

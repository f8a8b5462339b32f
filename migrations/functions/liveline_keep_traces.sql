-- A step of an append that holds sampled requests' commands: keeps each written event of theirs
-- with the request's trace context (`event_traces`). Per command: where its events begin
-- (`p_first_positions`; NULL for a command not written), when they were recorded, how many
-- there are, and the context. Returns how many rows it kept.
--
-- Its plan is generic, made once per session: the append's statement that calls it is then as
-- cheap to plan as one without it.
CREATE OR REPLACE FUNCTION liveline_keep_traces(
    p_first_positions bigint[],
    p_recorded_ats timestamptz[],
    p_event_counts integer[],
    p_traceparents text[],
    p_tracestates text[]
) RETURNS bigint
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_kept bigint;
BEGIN
    INSERT INTO event_traces ("position", recorded_at, traceparent, tracestate)
        SELECT w.first_position + k, w.recorded_at, w.traceparent, w.tracestate
        FROM unnest(p_first_positions, p_recorded_ats, p_event_counts, p_traceparents, p_tracestates)
            AS w(first_position, recorded_at, events, traceparent, tracestate)
        CROSS JOIN LATERAL generate_series(0, w.events - 1) AS k
        WHERE w.first_position IS NOT NULL;
    GET DIAGNOSTICS v_kept = ROW_COUNT;
    RETURN v_kept;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_keep_traces TO liveline_service;

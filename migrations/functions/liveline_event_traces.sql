-- The trace contexts kept with events (`event_traces`), given each event's position and commit
-- time: a probe of the key in the one partition of that time per event. Delivery calls it with every page
-- of the log it reads while it traces pushes.
--
-- Its plan is generic, made once per session: a statement on the partitioned table planned at
-- every call would cost more than the probes (see `liveline_events_after`).
CREATE OR REPLACE FUNCTION liveline_event_traces(p_positions bigint[], p_recorded_ats timestamptz[])
RETURNS TABLE ("position" bigint, traceparent text, tracestate text)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    RETURN QUERY SELECT t.position, t.traceparent, t.tracestate
        FROM unnest(p_positions, p_recorded_ats) AS w("position", recorded_at)
        JOIN LATERAL (
            SELECT x.position, x.traceparent, x.tracestate FROM event_traces x
            WHERE x.position = w.position AND x.recorded_at = w.recorded_at
            -- At most one row (the key): the limit keeps the subquery from being flattened into a
            -- hash join that reads the whole table at every call (1.6 ms a page at 100 % sampling).
            LIMIT 1
        ) AS t ON true;
END
$$;
REVOKE ALL ON FUNCTION liveline_event_traces FROM PUBLIC;
GRANT EXECUTE ON ROUTINE liveline_event_traces TO liveline_service, liveline_dashboard;

-- The log's events after a position and below the stable one (`liveline_stable_position`), in
-- order of position, at most `p_limit`; only an app's when `p_app` is given. The readers that
-- follow the log (delivery, the live feed) call it many times a second.
--
-- Its plans are generic, made once per session and kept until the log's partitions change. The
-- same statement prepared by a client would be planned again at almost every call: PostgreSQL
-- finds the plan made for a known position cheaper than a generic one, and planning a read of
-- every partition costs about 1 ms with 15 of them, more with each one a longer retention keeps.
CREATE OR REPLACE FUNCTION liveline_events_after(p_position bigint, p_limit bigint, p_app text DEFAULT NULL)
RETURNS SETOF events
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    IF p_app IS NULL THEN
        RETURN QUERY SELECT * FROM events
            WHERE position > p_position AND position < liveline_stable_position()
            ORDER BY position LIMIT p_limit;
    ELSE
        RETURN QUERY SELECT * FROM events
            WHERE app_id = p_app AND position > p_position AND position < liveline_stable_position()
            ORDER BY position LIMIT p_limit;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION liveline_events_after FROM PUBLIC;
GRANT EXECUTE ON ROUTINE liveline_events_after TO liveline_service, liveline_dashboard;

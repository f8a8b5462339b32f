-- The position below which the log is complete: no transaction still running can append below
-- it (positions are allocated in blocks by transaction id). Readers that follow the log read up
-- to it, so they never skip an event that commits later.
CREATE OR REPLACE FUNCTION liveline_stable_position() RETURNS bigint LANGUAGE sql STABLE AS $$
    SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint << 16
$$;
GRANT EXECUTE ON ROUTINE liveline_stable_position TO liveline_service, liveline_dashboard;

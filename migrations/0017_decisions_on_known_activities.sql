-- A command on an activity that the server itself wrote last is decided on the state that
-- append left, kept in the server's memory, without loading it again (#20): a batch of such
-- commands takes one round trip, the append, instead of two. Two things guard those decisions:
--   - the activity: its append expects the version the server knows, so an append by anyone else
--     since (another process, the deadline worker) refuses it with `LL409`, and the command is
--     decided again on a fresh load;
--   - the app's rules (budgets, flags) it was decided under: the statement that appends checks
--     that the app's row is still the version (`xmin`) the rules were read from, and fails as a
--     whole with `LL412` when an admin change came in between; the batch is then decided again
--     on fresh loads.
-- Rows are looked up one key at a time (`OFFSET 0`), whatever the table's size when the plan was
-- made.
CREATE FUNCTION liveline_rules_unchanged(p_app_ids text[], p_versions bigint[]) RETURNS boolean
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_app text;
BEGIN
    IF coalesce(cardinality(p_app_ids), 0) = 0 THEN
        RETURN true;
    END IF;
    SELECT r.app_id INTO v_app
        FROM unnest(p_app_ids, p_versions) AS r(app_id, version)
        LEFT JOIN LATERAL (SELECT a.xmin::text::bigint AS version FROM apps a WHERE a.app_id = r.app_id OFFSET 0) AS a
            ON true
        WHERE a.version IS DISTINCT FROM r.version
        LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'the rules of app % changed since the batch was decided', v_app USING ERRCODE = 'LL412';
    END IF;
    RETURN true;
END
$$;
GRANT EXECUTE ON FUNCTION liveline_rules_unchanged TO liveline_service;

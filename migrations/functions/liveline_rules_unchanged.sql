-- Fails with LL412 when an app's row is no longer the version (`xmin`) a batch's decisions were
-- made under: an admin change came in between, and the batch is decided again.
CREATE OR REPLACE FUNCTION liveline_rules_unchanged(p_app_ids text[], p_versions bigint[]) RETURNS boolean
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
GRANT EXECUTE ON ROUTINE liveline_rules_unchanged TO liveline_service;

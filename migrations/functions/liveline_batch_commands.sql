-- The keys of a batch of commands, one row each with its place in the batch (`n`): what the
-- batch's load joins the apps, idempotency keys and projection rows to.
CREATE OR REPLACE FUNCTION liveline_batch_commands(
    p_app_ids text[],
    p_activity_ids text[],
    p_is_request boolean[],
    p_device_ids text[],
    p_idempotency_keys text[]
) RETURNS TABLE (app_id text, activity_id text, is_request boolean, device_id text, idempotency_key text, n bigint)
LANGUAGE plpgsql STABLE ROWS 1 SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    RETURN QUERY SELECT * FROM unnest(p_app_ids, p_activity_ids, p_is_request, p_device_ids, p_idempotency_keys)
        WITH ORDINALITY;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_batch_commands TO liveline_service;

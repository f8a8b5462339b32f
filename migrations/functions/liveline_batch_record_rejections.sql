-- A step of `liveline_append_batch`: the commands refused before the append (by a rule, or by a
-- cap seen in the load), recorded with their idempotency keys.
CREATE OR REPLACE FUNCTION liveline_batch_record_rejections(
    p_app_ids text[],
    p_activity_ids text[],
    p_commands text[],
    p_codes text[],
    p_details jsonb[],
    p_occurred_at timestamptz[],
    p_idempotency_keys text[],
    p_request_sha256s bytea[],
    p_outcomes jsonb[]
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO rejections (app_id, activity_id, command, code, details, occurred_at)
        SELECT * FROM unnest(p_app_ids, p_activity_ids, p_commands, p_codes, p_details, p_occurred_at);
    INSERT INTO idempotency_keys (app_id, idempotency_key, request_sha256, activity_id, outcome)
        SELECT r.app_id, r.idempotency_key, r.request_sha256, r.activity_id, r.outcome
        FROM unnest(p_app_ids, p_idempotency_keys, p_request_sha256s, p_activity_ids, p_outcomes)
            AS r(app_id, idempotency_key, request_sha256, activity_id, outcome)
        WHERE r.idempotency_key IS NOT NULL;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_batch_record_rejections TO liveline_service;

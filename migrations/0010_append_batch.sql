-- Commands that arrive together commit together (issue #20): the store's batching writer
-- appends a whole batch — one command per activity — in one statement and one transaction, so
-- a round trip, a transaction and a commit are paid once per batch rather than once per command.
--
-- Each command goes through `liveline_append`, unchanged (deadlines use it directly), inside a
-- block of its own: a refusal of one command (a cap reached, a version conflict, an idempotency
-- key taken by a concurrent command) undoes that command's writes only and is reported in its
-- row; the others still commit. Any other failure (a deadlock, a broken connection) rolls the
-- whole batch back, and nothing of it is acknowledged.
--
-- The rejections the server decided before the append (a rule broken, a cap already reached in
-- the load) are recorded in the same statement, with their idempotency keys.
--
-- The events of all commands travel flattened, in command order: `p_event_counts[i]` of them
-- belong to command `i`. The result has one row per command, in order: where its events begin
-- and when they were recorded, or the SQLSTATE and JSON detail of its refusal.
CREATE FUNCTION liveline_append_batch(
    p_app_ids text[],
    p_activity_ids text[],
    p_expected_versions integer[],
    p_rows jsonb[],
    p_event_counts integer[],
    p_types text[],
    p_data jsonb[],
    p_causes text[],
    p_occurred_at timestamptz[],
    p_open_changes integer[],
    p_idempotency_keys text[],
    p_request_sha256s bytea[],
    p_outcomes jsonb[],
    p_rejected_app_ids text[],
    p_rejected_activity_ids text[],
    p_rejected_commands text[],
    p_rejected_codes text[],
    p_rejected_details jsonb[],
    p_rejected_at timestamptz[],
    p_rejected_keys text[],
    p_rejected_request_sha256s bytea[],
    p_rejected_outcomes jsonb[]
) RETURNS TABLE (first_position bigint, recorded_at timestamptz, refusal text, refusal_detail text)
LANGUAGE plpgsql
-- The statements below look rows up by key whatever the arrays hold: one plan each per session,
-- not a new plan per batch for each size of array.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_first integer := 1;
    v_last integer;
    v_constraint text;
    v_apps text[];
    v_devices text[];
    v_app_stripes smallint[];
    v_global_stripes smallint[];
BEGIN
    -- The commands refused before the append (a rule; a cap seen in the load), with their keys.
    IF cardinality(p_rejected_app_ids) > 0 THEN
        INSERT INTO rejections (app_id, activity_id, command, code, details, occurred_at)
            SELECT * FROM unnest(p_rejected_app_ids, p_rejected_activity_ids, p_rejected_commands, p_rejected_codes,
                p_rejected_details, p_rejected_at);
        INSERT INTO idempotency_keys (app_id, idempotency_key, request_sha256, activity_id, outcome)
            SELECT r.app_id, r.idempotency_key, r.request_sha256, r.activity_id, r.outcome
            FROM unnest(p_rejected_app_ids, p_rejected_keys, p_rejected_request_sha256s, p_rejected_activity_ids,
                p_rejected_outcomes) AS r(app_id, idempotency_key, request_sha256, activity_id, outcome)
            WHERE r.idempotency_key IS NOT NULL;
    END IF;

    -- Concurrent batches must not wait for each other in a cycle. A single command takes its
    -- locks in one order, but a batch takes those of many commands, so it takes every lock it
    -- may wait for first, each kind sorted, in an order all batches share: the activities, the
    -- app stripes and devices the closings free, the devices the openings take, the global
    -- stripes the closings free. Openings pick their stripes with SKIP LOCKED, which does not wait.
    -- The gate that a replay closes comes first, as in every append.
    LOCK TABLE liveline_append_gate IN ROW EXCLUSIVE MODE;
    -- A single command has nothing to order. Each lock is a lookup by key (LATERAL), whatever
    -- the planner thinks of the tables' sizes.
    IF cardinality(p_app_ids) > 1 THEN
        PERFORM FROM (SELECT * FROM unnest(p_app_ids, p_activity_ids, p_expected_versions) ORDER BY 1, 2)
                AS c(app_id, activity_id, version),
            LATERAL (SELECT FROM activities a WHERE a.app_id = c.app_id AND a.activity_id = c.activity_id
                FOR UPDATE) AS locked
            WHERE c.version > 0;
        IF -1 = ANY (p_open_changes) OR 1 = ANY (p_open_changes) THEN
            SELECT array_agg(c.app_id), array_agg(c.row ->> 'device_id'), array_agg(a.app_stripe), array_agg(a.global_stripe)
                INTO v_apps, v_devices, v_app_stripes, v_global_stripes
                FROM unnest(p_app_ids, p_activity_ids, p_rows, p_open_changes) AS c(app_id, activity_id, row, change)
                LEFT JOIN LATERAL (SELECT app_stripe, global_stripe FROM activities a
                    WHERE c.change = -1 AND a.app_id = c.app_id AND a.activity_id = c.activity_id OFFSET 0) AS a ON true
                WHERE c.change <> 0;
            PERFORM FROM (SELECT DISTINCT * FROM unnest(v_apps, v_app_stripes) ORDER BY 1, 2) AS c(app_id, stripe),
                LATERAL (SELECT FROM app_open_stripes s WHERE s.app_id = c.app_id AND s.stripe = c.stripe
                    FOR UPDATE) AS locked;
            PERFORM FROM (SELECT DISTINCT * FROM unnest(v_apps, v_devices) ORDER BY 1, 2) AS c(app_id, device_id),
                LATERAL (SELECT FROM device_open_counts d WHERE d.app_id = c.app_id AND d.device_id = c.device_id
                    FOR UPDATE) AS locked;
            PERFORM FROM (SELECT DISTINCT * FROM unnest(v_global_stripes) ORDER BY 1) AS c(stripe),
                LATERAL (SELECT FROM global_open_stripes s WHERE s.stripe = c.stripe FOR UPDATE) AS locked;
        END IF;
    END IF;
    FOR i IN 1 .. coalesce(array_length(p_app_ids, 1), 0) LOOP
        v_last := v_first + p_event_counts[i] - 1;
        first_position := NULL;
        recorded_at := NULL;
        refusal := NULL;
        refusal_detail := NULL;
        BEGIN
            SELECT a.first_position, a.recorded_at INTO first_position, recorded_at
            FROM liveline_append(
                p_app_ids[i], p_activity_ids[i], p_expected_versions[i], p_rows[i],
                p_types[v_first:v_last], p_data[v_first:v_last], p_causes[v_first:v_last],
                p_occurred_at[v_first:v_last], p_open_changes[i],
                p_idempotency_keys[i], p_request_sha256s[i], p_outcomes[i]) AS a;
        EXCEPTION
            WHEN SQLSTATE 'LL001' OR SQLSTATE 'LL002' OR SQLSTATE 'LL003' OR SQLSTATE 'LL409'
                OR unique_violation THEN
                GET STACKED DIAGNOSTICS refusal = RETURNED_SQLSTATE, refusal_detail = PG_EXCEPTION_DETAIL,
                    v_constraint = CONSTRAINT_NAME;
                IF refusal = '23505' AND v_constraint IS DISTINCT FROM 'idempotency_keys_pkey' THEN
                    RAISE;
                END IF;
        END;
        v_first := v_last + 1;
        RETURN NEXT;
    END LOOP;
END
$$;
GRANT EXECUTE ON FUNCTION liveline_append_batch TO liveline_service;

-- The commands of a batch as rows, for the batch's load. A function of its own, so that the
-- load's row estimate does not depend on how many commands a batch holds: with `unnest` in the
-- load itself, PostgreSQL would plan the load again for every batch instead of once per session.
-- The estimate is one row, so that the plan looks each command's rows up by key: with more, the
-- plan may hash-join whole tables (the projection, the idempotency keys) for a handful of rows.
CREATE FUNCTION liveline_batch_commands(
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
GRANT EXECUTE ON FUNCTION liveline_batch_commands TO liveline_service;

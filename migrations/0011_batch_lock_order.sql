-- Batches that create the same activities or idempotency keys deadlocked: `liveline_append_batch`
-- (0010) pre-locked the rows a batch may wait for, but an activity or a key that does not exist
-- yet has no row to lock, and two batches inserting the same ones in different orders waited for
-- each other until PostgreSQL broke the cycle (a second lost each time, and after three tries
-- the commands failed). Now a batch of more than one command takes a transaction-level advisory
-- lock on each activity and idempotency key it writes, sorted, before anything else.
--
-- And batches with openings deadlocked on app stripes: an opening takes any stripe of its app with
-- room, and waits for one when all are held; a batch holding one stripe (an earlier opening's or
-- a closing's) and waiting for another could wait for a batch doing the same the other way round.
-- 0010 meant to pre-lock what openings take, but looked for them as open change 1, which no
-- append carries (an opening is an append at expected version 0): it pre-locked for closings
-- only. Now a batch with openings locks all of their apps' stripes and their devices with the
-- other pre-locks, sorted.
-- The rest of the function is as it was.
CREATE OR REPLACE FUNCTION liveline_append_batch(
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
    -- The gate that a replay closes comes first, as in every append.
    LOCK TABLE liveline_append_gate IN ROW EXCLUSIVE MODE;
    -- Rows that do not exist yet cannot be locked: two batches that each create activities or
    -- idempotency keys the other also creates would wait for each other's uncommitted inserts,
    -- in whatever order each batch holds them. So a batch of more than one command or rejection
    -- first takes a transaction lock on each activity and each key it writes, sorted: two such
    -- batches that share one run one after the other. A batch of one takes none (it waits for
    -- one thing at a time).
    IF cardinality(p_app_ids) + cardinality(p_rejected_app_ids) > 1 THEN
        PERFORM pg_advisory_xact_lock(l.k) FROM (
            SELECT hashtextextended('activity ' || c.app_id || ' ' || c.activity_id, 0) AS k
                FROM unnest(p_app_ids, p_activity_ids) AS c(app_id, activity_id)
            UNION
            SELECT hashtextextended('key ' || c.app_id || ' ' || c.idempotency_key, 0)
                FROM unnest(p_app_ids || p_rejected_app_ids, p_idempotency_keys || p_rejected_keys)
                AS c(app_id, idempotency_key)
                WHERE c.idempotency_key IS NOT NULL
            ORDER BY 1
        ) AS l;
    END IF;

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
    -- A single command has nothing to order. Each lock is a lookup by key (LATERAL), whatever
    -- the planner thinks of the tables' sizes.
    IF cardinality(p_app_ids) > 1 THEN
        PERFORM FROM (SELECT * FROM unnest(p_app_ids, p_activity_ids, p_expected_versions) ORDER BY 1, 2)
                AS c(app_id, activity_id, version),
            LATERAL (SELECT FROM activities a WHERE a.app_id = c.app_id AND a.activity_id = c.activity_id
                FOR UPDATE) AS locked
            WHERE c.version > 0;
        -- Openings are the appends of new activities (expected version 0), closings those whose
        -- open count changes by -1.
        IF -1 = ANY (p_open_changes) OR 0 = ANY (p_expected_versions) THEN
            SELECT array_agg(c.app_id), array_agg(c.row ->> 'device_id'), array_agg(a.app_stripe), array_agg(a.global_stripe)
                INTO v_apps, v_devices, v_app_stripes, v_global_stripes
                FROM unnest(p_app_ids, p_activity_ids, p_rows, p_open_changes, p_expected_versions)
                    AS c(app_id, activity_id, row, change, version)
                LEFT JOIN LATERAL (SELECT app_stripe, global_stripe FROM activities a
                    WHERE c.change = -1 AND a.app_id = c.app_id AND a.activity_id = c.activity_id OFFSET 0) AS a ON true
                WHERE c.change = -1 OR c.version = 0;
            -- An opening takes whichever of its app's stripes has room, waiting for one if all
            -- are held: a batch that waited so while holding another stripe of the app could
            -- wait in a cycle. So a batch with openings holds all of their apps' stripes first.
            PERFORM FROM (
                    SELECT s.app_id, s.stripe FROM app_open_stripes s
                        JOIN unnest(v_apps, v_app_stripes) AS o(app_id, stripe) ON o.stripe IS NULL AND s.app_id = o.app_id
                    UNION
                    SELECT * FROM unnest(v_apps, v_app_stripes) AS c(app_id, stripe) WHERE c.stripe IS NOT NULL
                    ORDER BY 1, 2
                ) AS c(app_id, stripe),
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

-- Most commands of a batch neither open nor close an activity (updates, token registrations,
-- ends before the dismissal): they change one projection row and add events, and nothing else.
-- `liveline_append_batch` ran each of them through `liveline_append` in a block of its own, so
-- every command paid for a subtransaction, a function call and its own UPDATE, INSERT and
-- lookups. Now those plain appends are written together: one statement locks every activity
-- the batch changes and reads its version, one UPDATE writes all their projection rows (straight
-- to the locked rows, by address), one INSERT all their events, one INSERT their idempotency
-- records. A plain command whose version no longer matches is refused with `LL409`, as
-- `liveline_append` would refuse it, and the others go on.
--
-- Openings and closings still go through `liveline_append` one by one, each in its own block:
-- they take cap stripes and may be refused by a cap.
--
-- An idempotency key of a plain command that another process's command recorded after the
-- batch's load fails the plain appends' INSERT and so the batch, which is undone and decided
-- again (as a rejection's key taken meanwhile already did): its next load finds that command's
-- outcome and replays it. Within one process, commands with one key never share a batch or
-- run in two at once.
--
-- Events of plain appends take the first positions of the transaction, in command order; the
-- others follow. Every command's events stay contiguous and in version order; results are one
-- row per command, in command order, as before.
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
    v_count integer := coalesce(cardinality(p_app_ids), 0);
    v_constraint text;
    v_apps text[];
    v_devices text[];
    v_app_stripes smallint[];
    v_global_stripes smallint[];
    -- Per command: its activity's version and row address now (locked), where its events begin
    -- in the event arrays, and, for a plain append, its first position.
    v_versions integer[];
    v_tids tid[];
    v_starts integer[] := '{}';
    v_positions bigint[] := '{}';
    -- The plain appends to write together.
    v_plain integer[] := '{}';
    v_xid bigint;
    v_next bigint;
    v_last integer;
BEGIN
    -- The gate that a replay closes comes first, as in every append.
    LOCK TABLE liveline_append_gate IN ROW EXCLUSIVE MODE;
    -- Rows that do not exist yet cannot be locked: two batches that each create activities or
    -- idempotency keys the other also creates would wait for each other's uncommitted inserts,
    -- in whatever order each batch holds them. So a batch of more than one command or rejection
    -- first takes a transaction lock on each activity and each key it writes, sorted: two such
    -- batches that share one run one after the other. A batch of one takes none (it waits for
    -- one thing at a time).
    IF v_count + cardinality(p_rejected_app_ids) > 1 THEN
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
    IF v_count = 0 THEN
        RETURN;
    END IF;

    -- Concurrent batches must not wait for each other in a cycle, so a batch takes every lock
    -- it may wait for first, each kind sorted, in an order all batches and single commands
    -- share: the activities, the app stripes and devices the closings free, the devices the
    -- openings take, the global stripes the closings free. Openings pick their stripes with
    -- SKIP LOCKED, which does not wait. Each lock is a lookup by key (LATERAL), whatever the
    -- planner thinks of the tables' sizes. The activities' lock also reads their versions and
    -- addresses, for the plain appends.
    SELECT array_agg(l.version ORDER BY c.n), array_agg(l.tid ORDER BY c.n) INTO v_versions, v_tids
        FROM (SELECT * FROM unnest(p_app_ids, p_activity_ids, p_expected_versions) WITH ORDINALITY
                ORDER BY 1, 2) AS c(app_id, activity_id, version, n)
        LEFT JOIN LATERAL (SELECT a.version, a.ctid AS tid FROM activities a
            WHERE c.version > 0 AND a.app_id = c.app_id AND a.activity_id = c.activity_id FOR UPDATE) AS l ON true;
    -- Openings are the appends of new activities (expected version 0), closings those whose
    -- open count changes by -1.
    IF v_count > 1 AND (-1 = ANY (p_open_changes) OR 0 = ANY (p_expected_versions)) THEN
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

    -- The plain appends whose version matches take the transaction's first positions.
    v_xid := pg_current_xact_id()::text::bigint;
    SELECT coalesce(max(position) + 1, v_xid << 16) INTO v_next FROM events
        WHERE position >= v_xid << 16 AND position < (v_xid + 1) << 16;
    v_last := 1;
    FOR i IN 1 .. v_count LOOP
        v_starts[i] := v_last;
        v_last := v_last + p_event_counts[i];
        IF p_expected_versions[i] > 0 AND p_open_changes[i] = 0 AND v_versions[i] = p_expected_versions[i] THEN
            v_plain := v_plain || i;
            v_positions[i] := v_next;
            v_next := v_next + p_event_counts[i];
        END IF;
    END LOOP;
    -- Their writes, together. Their projection rows keep their stripes (they neither open nor
    -- close); the rows are locked at the addresses read above.
    IF cardinality(v_plain) > 0 THEN
        UPDATE activities AS a SET
            (state, version, activity_type, attributes, content_state, stale_date, relevance_score,
             push_type, push_token, device_id, start_date, last_timestamp, requested_at, activated_at,
             ended_at, dismissed_at, dismissal_date, next_deadline_at, next_deadline_kind, last_event_at,
             style, end_reason, priority_updates)
            = (r.state, r.version, r.activity_type, r.attributes, r.content_state, r.stale_date, r.relevance_score,
               r.push_type, r.push_token, r.device_id, r.start_date, r.last_timestamp, r.requested_at, r.activated_at,
               r.ended_at, r.dismissed_at, r.dismissal_date, r.next_deadline_at, r.next_deadline_kind, r.last_event_at,
               r.style, r.end_reason, r.priority_updates)
            FROM unnest(v_plain) AS p(i), LATERAL jsonb_populate_record(NULL::activities, p_rows[p.i]) AS r
            WHERE a.ctid = v_tids[p.i];
        INSERT INTO events (position, transaction_id, app_id, activity_id, version, type, data, caused_by, occurred_at)
            SELECT v_positions[p.i] + e.k, pg_current_xact_id(), p_app_ids[p.i], p_activity_ids[p.i],
                   p_expected_versions[p.i] + e.k + 1, p_types[v_starts[p.i] + e.k], p_data[v_starts[p.i] + e.k],
                   p_causes[v_starts[p.i] + e.k]::event_cause, p_occurred_at[v_starts[p.i] + e.k]
            FROM unnest(v_plain) AS p(i), generate_series(0, p_event_counts[p.i] - 1) AS e(k);
        INSERT INTO idempotency_keys (app_id, idempotency_key, request_sha256, activity_id, outcome)
            SELECT p_app_ids[p.i], p_idempotency_keys[p.i], p_request_sha256s[p.i], p_activity_ids[p.i], p_outcomes[p.i]
            FROM unnest(v_plain) AS p(i)
            WHERE p_idempotency_keys[p.i] IS NOT NULL;
    END IF;

    FOR i IN 1 .. v_count LOOP
        first_position := NULL;
        recorded_at := NULL;
        refusal := NULL;
        refusal_detail := NULL;
        IF i = ANY (v_plain) THEN
            first_position := v_positions[i];
            recorded_at := now();
        ELSIF p_expected_versions[i] > 0 AND p_open_changes[i] = 0
            AND v_versions[i] IS DISTINCT FROM p_expected_versions[i] THEN
            refusal := 'LL409';
            refusal_detail := json_build_object('actual', v_versions[i])::text;
        ELSE
            BEGIN
                SELECT a.first_position, a.recorded_at INTO first_position, recorded_at
                FROM liveline_append(
                    p_app_ids[i], p_activity_ids[i], p_expected_versions[i], p_rows[i],
                    p_types[v_starts[i]:v_starts[i] + p_event_counts[i] - 1],
                    p_data[v_starts[i]:v_starts[i] + p_event_counts[i] - 1],
                    p_causes[v_starts[i]:v_starts[i] + p_event_counts[i] - 1],
                    p_occurred_at[v_starts[i]:v_starts[i] + p_event_counts[i] - 1], p_open_changes[i],
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
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;

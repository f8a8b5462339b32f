-- Appends a batch of commands in one statement: plain appends written together; openings
-- admitted together when they all fit, else one by one by `liveline_admit_opening`, and written
-- together; closings (and a lone opening) through `liveline_append`; the commands refused before
-- the append recorded with their idempotency keys. Returns, per command in order, its first
-- position or what refused it.
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
    v_refusal text;
    v_detail text;
    -- The closings' and the openings' apps, devices and stripes, to lock in order.
    v_apps text[];
    v_devices text[];
    v_app_stripes smallint[];
    v_global_stripes smallint[];
    -- Per command: its activity's version and row address now (locked), where its events begin
    -- in the event arrays, its first position once written, and what refused it.
    v_versions integer[];
    v_tids tid[];
    v_starts integer[] := '{}';
    v_positions bigint[] := '{}';
    v_refusals text[] := '{}';
    v_details text[] := '{}';
    -- The plain appends; the openings, those admitted (with the stripes they took), and whether
    -- they are admitted one by one; the commands decided through `liveline_append`.
    v_plain integer[] := '{}';
    v_openings integer[] := '{}';
    v_opened integer[] := '{}';
    v_opened_app_stripes smallint[] := '{}';
    v_opened_global_stripes smallint[] := '{}';
    v_admit boolean := false;
    v_app_stripe smallint;
    v_one_by_one integer[] := '{}';
    v_written integer[];
    -- Whether the batch holds every stripe of its openings' apps, or one of each with room for
    -- all of the app's openings: those stripes (by app), and the openings of each app.
    v_holds_all_stripes boolean := true;
    v_stripe_apps text[];
    v_stripes smallint[];
    v_stripe_tids tid[];
    v_app_openings integer[];
    -- Whether the openings all fit, the activities among them that exist, the devices' counts
    -- the attempt took (given back when they do not fit), and the global stripe they take.
    v_all_fit boolean := false;
    v_existing integer[];
    v_existing_count integer;
    v_devices_locked boolean := false;
    v_device_apps text[];
    v_device_ids text[];
    v_device_taken integer[];
    v_global_stripe smallint;
    v_xid bigint;
    v_next bigint;
    v_last integer;
    i integer;
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
    -- openings take, the global stripes the closings free. Openings pick their global stripes
    -- with SKIP LOCKED, which does not wait. Each lock is a lookup by key (LATERAL), whatever
    -- the planner thinks of the tables' sizes. The activities' lock also reads their versions and
    -- addresses, for the plain appends.
    SELECT array_agg(l.version ORDER BY c.n), array_agg(l.tid ORDER BY c.n) INTO v_versions, v_tids
        FROM (SELECT * FROM unnest(p_app_ids, p_activity_ids, p_expected_versions) WITH ORDINALITY
                ORDER BY 1, 2) AS c(app_id, activity_id, version, n)
        LEFT JOIN LATERAL (SELECT a.version, a.ctid AS tid FROM activities a
            WHERE c.version > 0 AND a.app_id = c.app_id AND a.activity_id = c.activity_id FOR UPDATE) AS l ON true;
    -- Openings are the appends of new activities (expected version 0), closings those whose
    -- open count changes by -1.
    --
    -- A batch that opens and closes nothing else first tries, without waiting, to take for each
    -- app one stripe with room for all of the app's openings: then concurrent batches open side
    -- by side, each on stripes of its own. When an app has no such stripe free, the batch gives
    -- back those it took (the block is undone) and takes all of the apps' stripes, waiting for
    -- them in order, as a batch with closings does.
    IF v_count > 1 AND 0 = ANY (p_expected_versions) AND NOT (-1 = ANY (p_open_changes)) THEN
        BEGIN
            SELECT array_agg(c.app_id ORDER BY c.app_id), array_agg(s.stripe ORDER BY c.app_id),
                   array_agg(s.tid ORDER BY c.app_id), array_agg(c.openings ORDER BY c.app_id)
                INTO v_stripe_apps, v_stripes, v_stripe_tids, v_app_openings
                FROM (SELECT p_app_ids[c.n], count(*) FROM unnest(p_expected_versions) WITH ORDINALITY AS c(version, n)
                        WHERE c.version = 0 GROUP BY 1) AS c(app_id, openings)
                LEFT JOIN LATERAL (SELECT s.stripe, s.ctid AS tid FROM app_open_stripes s
                    WHERE s.app_id = c.app_id AND s.capacity - s.open >= c.openings
                    ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED) AS s ON true;
            IF array_position(v_stripes, NULL) IS NOT NULL THEN
                RAISE EXCEPTION 'no free stripe with room for the openings' USING ERRCODE = 'LL010';
            END IF;
            v_holds_all_stripes := false;
        EXCEPTION
            WHEN SQLSTATE 'LL010' THEN
                v_holds_all_stripes := true;
        END;
    END IF;
    IF v_count > 1 AND (-1 = ANY (p_open_changes) OR (0 = ANY (p_expected_versions) AND v_holds_all_stripes)) THEN
        SELECT array_agg(c.app_id), array_agg(c.row ->> 'device_id'), array_agg(a.app_stripe), array_agg(a.global_stripe)
            INTO v_apps, v_devices, v_app_stripes, v_global_stripes
            FROM unnest(p_app_ids, p_activity_ids, p_rows, p_open_changes, p_expected_versions)
                AS c(app_id, activity_id, row, change, version)
            LEFT JOIN LATERAL (SELECT app_stripe, global_stripe FROM activities a
                WHERE c.change = -1 AND a.app_id = c.app_id AND a.activity_id = c.activity_id OFFSET 0) AS a ON true
            WHERE c.change = -1 OR c.version = 0;
        -- An opening alone takes whichever of its app's stripes has room, waiting for one if all
        -- are held: a batch that waited so while holding another stripe of the app could wait in
        -- a cycle. So a batch with openings that found no free stripe with room for them, or with
        -- closings, holds all of their apps' stripes first.
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

    -- Sort the commands: plain appends whose version matches are written together, those whose
    -- version moved are refused; the openings of a batch of more than one are admitted below,
    -- together or one by one; the others (closings, a lone opening) go through `liveline_append`.
    v_last := 1;
    FOR i IN 1 .. v_count LOOP
        v_starts[i] := v_last;
        v_last := v_last + p_event_counts[i];
        IF p_expected_versions[i] > 0 AND p_open_changes[i] = 0 THEN
            IF v_versions[i] = p_expected_versions[i] THEN
                v_plain := v_plain || i;
            ELSE
                v_refusals[i] := 'LL409';
                v_details[i] := json_build_object('actual', v_versions[i])::text;
            END IF;
        ELSIF p_expected_versions[i] = 0 AND v_count > 1 THEN
            v_openings := v_openings || i;
        ELSE
            v_one_by_one := v_one_by_one || i;
        END IF;
    END LOOP;

    IF cardinality(v_openings) > 0 THEN
        -- The openings whose activity exists already (by opening): refused.
        SELECT array_agg(l.version ORDER BY o.n), count(l.version) INTO v_existing, v_existing_count
            FROM unnest(v_openings) WITH ORDINALITY AS o(i, n)
            LEFT JOIN LATERAL (SELECT a.version FROM activities a
                WHERE a.app_id = p_app_ids[o.i] AND a.activity_id = p_activity_ids[o.i] OFFSET 0) AS l ON true;
    END IF;
    IF cardinality(v_openings) > 0 AND NOT v_holds_all_stripes AND v_existing_count = 0 THEN
        -- Most batches of openings fit whole: the batch holds one stripe of each app with room
        -- for all of the app's openings, none of them exists, their devices stay under the cap
        -- with all of them, and one global stripe that no one else holds has room for all. Then
        -- admitting them one after the other would admit every one, so they are admitted
        -- together: each device's count takes its openings as its row is created or locked
        -- (sorted, the order every opening takes them in). The apps' stripes are held, so this
        -- stays true until the batch commits.
        WITH wanted AS (
            SELECT p_app_ids[o.i] AS app_id, p_rows[o.i] ->> 'device_id' AS device_id, count(*)::integer AS n
                FROM unnest(v_openings) AS o(i)
                WHERE p_rows[o.i] ->> 'device_id' IS NOT NULL
                GROUP BY 1, 2
        ), counted AS (
            INSERT INTO device_open_counts AS d (app_id, device_id, open)
                SELECT * FROM wanted ORDER BY 1, 2
            ON CONFLICT (app_id, device_id) DO UPDATE SET open = d.open + excluded.open
            RETURNING d.app_id::text, d.device_id, d.open
        )
        SELECT array_agg(w.app_id), array_agg(w.device_id), array_agg(w.n),
               coalesce(bool_and(a.max_open_per_device IS NULL OR c.open <= a.max_open_per_device), true)
            INTO v_device_apps, v_device_ids, v_device_taken, v_all_fit
            FROM wanted AS w
            JOIN counted AS c ON c.app_id = w.app_id AND c.device_id = w.device_id,
            LATERAL (SELECT a.max_open_per_device FROM apps a WHERE a.app_id = w.app_id OFFSET 0) AS a;
        v_devices_locked := true;
        IF v_all_fit THEN
            SELECT s.stripe INTO v_global_stripe FROM global_open_stripes s
                WHERE s.capacity - s.open >= cardinality(v_openings)
                ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED;
            v_all_fit := FOUND;
        END IF;
        IF v_all_fit THEN
            UPDATE app_open_stripes AS s SET open = s.open + t.taken
                FROM unnest(v_stripe_tids, v_app_openings) AS t(tid, taken)
                WHERE s.ctid = t.tid;
            UPDATE global_open_stripes AS s SET open = s.open + cardinality(v_openings)
                WHERE s.stripe = v_global_stripe;
            v_opened := v_openings;
            SELECT array_agg(v_stripes[array_position(v_stripe_apps, p_app_ids[o.i])] ORDER BY o.n),
                   array_agg(v_global_stripe ORDER BY o.n)
                INTO v_opened_app_stripes, v_opened_global_stripes
                FROM unnest(v_openings) WITH ORDINALITY AS o(i, n);
        ELSIF v_device_apps IS NOT NULL THEN
            UPDATE device_open_counts AS d SET open = d.open - t.n
                FROM unnest(v_device_apps, v_device_ids, v_device_taken) AS t(app_id, device_id, n)
                WHERE d.app_id = t.app_id AND d.device_id = t.device_id;
        END IF;
    END IF;
    IF cardinality(v_openings) > 0 AND NOT v_all_fit THEN
        -- Otherwise each opening is admitted alone, in order, after the closings (below), by the
        -- admission a lone opening goes through (`liveline_admit_opening`). Their devices are
        -- created if new and locked first, sorted: when the batch holds one stripe per app, other
        -- transactions open activities of the same apps meanwhile.
        IF NOT v_devices_locked THEN
            INSERT INTO device_open_counts AS d (app_id, device_id)
                SELECT DISTINCT p_app_ids[o.i], p_rows[o.i] ->> 'device_id' FROM unnest(v_openings) AS o(i)
                    WHERE p_rows[o.i] ->> 'device_id' IS NOT NULL
                    ORDER BY 1, 2
                ON CONFLICT (app_id, device_id) DO UPDATE SET open = d.open;
        END IF;
        v_admit := true;
    END IF;

    -- The closings (and a lone opening), one by one, each through `liveline_append` in a block of
    -- its own: a refusal undoes only that command.
    FOREACH i IN ARRAY v_one_by_one LOOP
        BEGIN
            SELECT a.first_position INTO v_next
            FROM liveline_append(
                p_app_ids[i], p_activity_ids[i], p_expected_versions[i], p_rows[i],
                p_types[v_starts[i]:v_starts[i] + p_event_counts[i] - 1],
                p_data[v_starts[i]:v_starts[i] + p_event_counts[i] - 1],
                p_causes[v_starts[i]:v_starts[i] + p_event_counts[i] - 1],
                p_occurred_at[v_starts[i]:v_starts[i] + p_event_counts[i] - 1], p_open_changes[i],
                p_idempotency_keys[i], p_request_sha256s[i], p_outcomes[i]) AS a;
            v_positions[i] := v_next;
        EXCEPTION
            WHEN SQLSTATE 'LL001' OR SQLSTATE 'LL002' OR SQLSTATE 'LL003' OR SQLSTATE 'LL409'
                OR unique_violation THEN
                GET STACKED DIAGNOSTICS v_refusal = RETURNED_SQLSTATE, v_detail = PG_EXCEPTION_DETAIL,
                    v_constraint = CONSTRAINT_NAME;
                IF v_refusal = '23505' AND v_constraint IS DISTINCT FROM 'idempotency_keys_pkey' THEN
                    RAISE;
                END IF;
                v_refusals[i] := v_refusal;
                v_details[i] := v_detail;
        END;
    END LOOP;

    -- The openings that do not fit together, admitted one after the other, in order: a refusal
    -- counts nothing, and refuses that opening alone.
    IF v_admit THEN
        FOR k IN 1 .. cardinality(v_openings) LOOP
            i := v_openings[k];
            IF v_existing[k] IS NOT NULL THEN
                v_refusals[i] := 'LL409';
                v_details[i] := json_build_object('actual', v_existing[k])::text;
                CONTINUE;
            END IF;
            SELECT a.app_stripe, a.global_stripe, a.refusal, a.refusal_detail
                INTO v_app_stripe, v_global_stripe, v_refusal, v_detail
                FROM liveline_admit_opening(p_app_ids[i], p_rows[i] ->> 'device_id') AS a;
            IF v_refusal IS NOT NULL THEN
                v_refusals[i] := v_refusal;
                v_details[i] := v_detail;
                CONTINUE;
            END IF;
            v_opened := v_opened || i;
            v_opened_app_stripes := v_opened_app_stripes || v_app_stripe;
            v_opened_global_stripes := v_opened_global_stripes || v_global_stripe;
        END LOOP;
    END IF;
    IF cardinality(v_opened) > 0 THEN
        INSERT INTO activities
            SELECT r.* FROM unnest(v_opened, v_opened_app_stripes, v_opened_global_stripes) AS o(i, app_stripe, global_stripe),
                LATERAL jsonb_populate_record(NULL::activities, p_rows[o.i]
                    || jsonb_build_object('app_stripe', o.app_stripe, 'global_stripe', o.global_stripe)) AS r;
    END IF;

    -- The plain appends and the openings that fit, in command order, take the transaction's
    -- next positions. Their projection rows: the plain ones keep their stripes (they neither
    -- open nor close), and are written at the addresses locked above.
    SELECT array_agg(w.i ORDER BY w.i) INTO v_written FROM unnest(v_plain || v_opened) AS w(i);
    IF v_written IS NOT NULL THEN
        v_xid := pg_current_xact_id()::text::bigint;
        SELECT coalesce(max(position) + 1, v_xid << 16) INTO v_next FROM events
            WHERE position >= v_xid << 16 AND position < (v_xid + 1) << 16;
        FOREACH i IN ARRAY v_written LOOP
            v_positions[i] := v_next;
            v_next := v_next + p_event_counts[i];
        END LOOP;
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
        END IF;
        INSERT INTO events (position, transaction_id, app_id, activity_id, version, type, data, caused_by, occurred_at)
            SELECT v_positions[p.i] + e.k, pg_current_xact_id(), p_app_ids[p.i], p_activity_ids[p.i],
                   p_expected_versions[p.i] + e.k + 1, p_types[v_starts[p.i] + e.k], p_data[v_starts[p.i] + e.k],
                   p_causes[v_starts[p.i] + e.k]::event_cause, p_occurred_at[v_starts[p.i] + e.k]
            FROM unnest(v_written) AS p(i), generate_series(0, p_event_counts[p.i] - 1) AS e(k);
        INSERT INTO idempotency_keys (app_id, idempotency_key, request_sha256, activity_id, outcome)
            SELECT p_app_ids[p.i], p_idempotency_keys[p.i], p_request_sha256s[p.i], p_activity_ids[p.i], p_outcomes[p.i]
            FROM unnest(v_written) AS p(i)
            WHERE p_idempotency_keys[p.i] IS NOT NULL;
    END IF;

    RETURN QUERY SELECT v_positions[c.i], CASE WHEN v_positions[c.i] IS NOT NULL THEN now() END,
            v_refusals[c.i], v_details[c.i]
        FROM generate_series(1, v_count) AS c(i) ORDER BY c.i;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_append_batch TO liveline_service;

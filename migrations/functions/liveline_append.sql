-- Appends one command's events to an activity's stream and writes its projection row, in the
-- caller's transaction. An opening (expected version 0) must fit the app's cap, the app's
-- per-device cap and the global cap, each counted exactly in stripes; a closing frees its
-- stripes. Refusals are raised with the codes of `AppendRefusal` (LL001, LL002, LL003, LL409).
CREATE OR REPLACE FUNCTION liveline_append(
    p_app_id text,
    p_activity_id text,
    p_expected_version integer,
    p_row jsonb,
    p_types text[],
    p_data jsonb[],
    p_causes text[],
    p_occurred_at timestamptz[],
    p_open_change integer,
    p_idempotency_key text,
    p_request_sha256 bytea,
    p_outcome jsonb
) RETURNS TABLE (first_position bigint, recorded_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_device text := p_row ->> 'device_id';
    v_device_limit integer;
    v_stripe smallint;
    v_app_stripe smallint;
    v_count bigint;
    v_limit bigint;
    v_version integer;
    v_xid bigint := pg_current_xact_id()::text::bigint;
    v_first bigint;
BEGIN
    LOCK TABLE liveline_append_gate IN ROW EXCLUSIVE MODE;
    IF p_expected_version = 0 THEN
        -- A new activity: it opens, so it must fit every cap. Locks are taken in one order
        -- (app stripe, device, global stripe, activity) by every path, so they cannot deadlock.
        -- Any of the app's stripes with room that no one else holds; if all those are held,
        -- wait for one and take it if it still has room once its holder commits.
        SELECT stripe INTO v_app_stripe FROM app_open_stripes
            WHERE app_id = p_app_id AND open < capacity ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            SELECT stripe INTO v_app_stripe FROM app_open_stripes
                WHERE app_id = p_app_id AND open < capacity ORDER BY stripe LIMIT 1 FOR UPDATE;
        END IF;
        IF NOT FOUND THEN
            SELECT sum(open) INTO v_count FROM app_open_stripes WHERE app_id = p_app_id;
            SELECT max_open INTO v_limit FROM apps WHERE app_id = p_app_id;
            RAISE EXCEPTION 'app cap reached' USING ERRCODE = 'LL001',
                DETAIL = json_build_object('limit', v_limit, 'count', v_count)::text;
        END IF;
        UPDATE app_open_stripes SET open = open + 1 WHERE app_id = p_app_id AND stripe = v_app_stripe;
        IF v_device IS NOT NULL THEN
            -- The per-device cap is read now that one of the app's stripes is held: a change of
            -- the app's caps locks all its stripes first, so it has either committed (and is
            -- seen here) or waits for this opening.
            SELECT max_open_per_device INTO v_device_limit FROM apps WHERE app_id = p_app_id;
            INSERT INTO device_open_counts AS d (app_id, device_id, open) VALUES (p_app_id, v_device, 1)
            ON CONFLICT (app_id, device_id) DO UPDATE SET open = d.open + 1
                WHERE v_device_limit IS NULL OR d.open < v_device_limit;
            IF NOT FOUND THEN
                SELECT open INTO v_count FROM device_open_counts WHERE app_id = p_app_id AND device_id = v_device;
                RAISE EXCEPTION 'device cap reached' USING ERRCODE = 'LL003',
                    DETAIL = json_build_object('limit', v_device_limit, 'count', v_count)::text;
            END IF;
        END IF;
        SELECT stripe INTO v_stripe FROM global_open_stripes WHERE open < capacity
            ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            SELECT stripe INTO v_stripe FROM global_open_stripes WHERE open < capacity
                ORDER BY stripe LIMIT 1 FOR UPDATE;
        END IF;
        IF NOT FOUND THEN
            SELECT sum(open) INTO v_count FROM global_open_stripes;
            SELECT global_max_open INTO v_limit FROM service_limits;
            RAISE EXCEPTION 'global cap reached' USING ERRCODE = 'LL002',
                DETAIL = json_build_object('limit', v_limit, 'count', v_count)::text;
        END IF;
        UPDATE global_open_stripes SET open = open + 1 WHERE stripe = v_stripe;
        INSERT INTO activities
            SELECT * FROM jsonb_populate_record(
                NULL::activities, p_row || jsonb_build_object('app_stripe', v_app_stripe, 'global_stripe', v_stripe))
            ON CONFLICT (app_id, activity_id) DO NOTHING;
        IF NOT FOUND THEN
            SELECT version INTO v_version FROM activities WHERE app_id = p_app_id AND activity_id = p_activity_id;
            RAISE EXCEPTION 'version conflict' USING ERRCODE = 'LL409',
                DETAIL = json_build_object('actual', v_version)::text;
        END IF;
    ELSE
        SELECT app_stripe, global_stripe INTO v_app_stripe, v_stripe FROM activities
            WHERE app_id = p_app_id AND activity_id = p_activity_id AND version = p_expected_version
            FOR UPDATE;
        IF NOT FOUND THEN
            SELECT version INTO v_version FROM activities WHERE app_id = p_app_id AND activity_id = p_activity_id;
            RAISE EXCEPTION 'version conflict' USING ERRCODE = 'LL409',
                DETAIL = json_build_object('actual', v_version)::text;
        END IF;
        IF p_open_change = -1 THEN
            -- While a lowered cap leaves excess, a closing retires one unit of it with its
            -- stripe's share instead of making room. The stripe is locked before the app's (or
            -- the service's) row, as a cap change does; the row only while it records excess.
            UPDATE app_open_stripes SET open = open - 1 WHERE app_id = p_app_id AND stripe = v_app_stripe;
            UPDATE apps SET open_excess = open_excess - 1 WHERE app_id = p_app_id AND open_excess > 0;
            IF FOUND THEN
                UPDATE app_open_stripes SET capacity = capacity - 1 WHERE app_id = p_app_id AND stripe = v_app_stripe;
            END IF;
            IF v_device IS NOT NULL THEN
                UPDATE device_open_counts SET open = open - 1 WHERE app_id = p_app_id AND device_id = v_device;
            END IF;
            UPDATE global_open_stripes SET open = open - 1 WHERE stripe = v_stripe;
            UPDATE service_limits SET open_excess = open_excess - 1 WHERE open_excess > 0;
            IF FOUND THEN
                UPDATE global_open_stripes SET capacity = capacity - 1 WHERE stripe = v_stripe;
            END IF;
            v_app_stripe := NULL;
            v_stripe := NULL;
        END IF;
        UPDATE activities AS a SET
            (state, version, activity_type, attributes, content_state, stale_date, relevance_score,
             push_type, push_token, device_id, start_date, last_timestamp, requested_at, activated_at,
             ended_at, dismissed_at, dismissal_date, next_deadline_at, next_deadline_kind, last_event_at,
             style, end_reason, priority_updates, app_stripe, global_stripe)
            = (r.state, r.version, r.activity_type, r.attributes, r.content_state, r.stale_date, r.relevance_score,
               r.push_type, r.push_token, r.device_id, r.start_date, r.last_timestamp, r.requested_at, r.activated_at,
               r.ended_at, r.dismissed_at, r.dismissal_date, r.next_deadline_at, r.next_deadline_kind, r.last_event_at,
               r.style, r.end_reason, r.priority_updates, v_app_stripe, v_stripe)
            FROM jsonb_populate_record(NULL::activities, p_row) AS r
            WHERE a.app_id = p_app_id AND a.activity_id = p_activity_id;
    END IF;

    -- This transaction's next position: usually the first of its block.
    SELECT coalesce(max(position) + 1, v_xid << 16) INTO v_first FROM events
        WHERE position >= v_xid << 16 AND position < (v_xid + 1) << 16;
    INSERT INTO events (position, transaction_id, app_id, activity_id, version, type, data, caused_by, occurred_at)
        SELECT v_first + e.n - 1, pg_current_xact_id(), p_app_id, p_activity_id, p_expected_version + e.n::integer,
               e.type, e.data, e.cause::event_cause, e.occurred_at
        FROM unnest(p_types, p_data, p_causes, p_occurred_at) WITH ORDINALITY AS e(type, data, cause, occurred_at, n);

    IF p_idempotency_key IS NOT NULL THEN
        INSERT INTO idempotency_keys (app_id, idempotency_key, request_sha256, activity_id, outcome)
            VALUES (p_app_id, p_idempotency_key, p_request_sha256, p_activity_id, p_outcome);
    END IF;
    RETURN QUERY SELECT v_first, now();
END
$$;
GRANT EXECUTE ON FUNCTION liveline_append TO liveline_service;

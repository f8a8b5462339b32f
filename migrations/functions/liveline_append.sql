-- Appends one command's events to an activity's stream and writes its projection row, in the
-- caller's transaction. An opening (expected version 0) is admitted by `liveline_admit_opening`
-- (the app's cap, the per-device cap, the global cap); a closing frees its stripes
-- (`liveline_batch_lock_cap_rows`, `liveline_batch_free_stripes`, as in a batch). Refusals are
-- raised with the codes of `AppendRefusal` (LL001, LL002, LL003, LL409).
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
    v_stripe smallint;
    v_app_stripe smallint;
    v_refusal text;
    v_detail text;
    v_version integer;
    v_first bigint;
    -- When the stream began: its events' partition.
    v_stream_recorded_at timestamptz := now();
BEGIN
    LOCK TABLE liveline_append_gate IN ROW EXCLUSIVE MODE;
    IF p_expected_version = 0 THEN
        -- A new activity: it opens, so it must fit every cap.
        SELECT a.app_stripe, a.global_stripe, a.refusal, a.refusal_detail
            INTO v_app_stripe, v_stripe, v_refusal, v_detail
            FROM liveline_admit_opening(p_app_id, p_row ->> 'device_id') AS a;
        IF v_refusal IS NOT NULL THEN
            RAISE EXCEPTION 'the opening does not fit its caps' USING ERRCODE = v_refusal, DETAIL = v_detail;
        END IF;
        INSERT INTO activities
            SELECT * FROM jsonb_populate_record(
                NULL::activities, p_row || jsonb_build_object('app_stripe', v_app_stripe, 'global_stripe', v_stripe,
                    'stream_recorded_at', v_stream_recorded_at))
            ON CONFLICT (app_id, activity_id) DO NOTHING;
        IF NOT FOUND THEN
            SELECT version INTO v_version FROM activities WHERE app_id = p_app_id AND activity_id = p_activity_id;
            RAISE EXCEPTION 'version conflict' USING ERRCODE = 'LL409',
                DETAIL = json_build_object('actual', v_version)::text;
        END IF;
    ELSE
        SELECT app_stripe, global_stripe, stream_recorded_at INTO v_app_stripe, v_stripe, v_stream_recorded_at
            FROM activities
            WHERE app_id = p_app_id AND activity_id = p_activity_id AND version = p_expected_version
            FOR UPDATE;
        IF NOT FOUND THEN
            SELECT version INTO v_version FROM activities WHERE app_id = p_app_id AND activity_id = p_activity_id;
            RAISE EXCEPTION 'version conflict' USING ERRCODE = 'LL409',
                DETAIL = json_build_object('actual', v_version)::text;
        END IF;
        IF p_open_change = -1 THEN
            -- It frees its stripes and device, and retires excess, as a batch's closings do.
            PERFORM liveline_batch_lock_cap_rows(ARRAY[1], '{}', ARRAY[p_app_id], ARRAY[p_row],
                ARRAY[v_app_stripe], ARRAY[v_stripe]);
            PERFORM liveline_batch_free_stripes(ARRAY[1], ARRAY[p_app_id], ARRAY[p_row],
                ARRAY[v_app_stripe], ARRAY[v_stripe]);
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

    v_first := liveline_take_positions(cardinality(p_types));
    INSERT INTO events (position, transaction_id, app_id, activity_id, version, type, data, caused_by, occurred_at,
                        stream_recorded_at)
        SELECT v_first + e.n - 1, pg_current_xact_id(), p_app_id, p_activity_id, p_expected_version + e.n::integer,
               e.type, e.data, e.cause::event_cause, e.occurred_at, v_stream_recorded_at
        FROM unnest(p_types, p_data, p_causes, p_occurred_at) WITH ORDINALITY AS e(type, data, cause, occurred_at, n);

    IF p_idempotency_key IS NOT NULL THEN
        INSERT INTO idempotency_keys (app_id, idempotency_key, request_sha256, activity_id, outcome)
            VALUES (p_app_id, p_idempotency_key, p_request_sha256, p_activity_id, p_outcome);
    END IF;
    RETURN QUERY SELECT v_first, now();
END
$$;
GRANT EXECUTE ON ROUTINE liveline_append TO liveline_service;

-- Appends one command's events to an activity's stream, in the caller's transaction, by the steps
-- a batch takes (`liveline_append_batch`) for one command: an opening (expected version 0) is
-- admitted by `liveline_admit_opening` and its row inserted (`liveline_insert_openings`); an
-- append to an existing activity locks its row, a closing frees its stripes
-- (`liveline_lock_cap_rows`, `liveline_free_stripes`), and the row is written
-- (`liveline_update_projections`); then the events and the idempotency key
-- (`liveline_write_events`), with the trace context of a sampled request's command (`p_traceparent`,
-- `p_tracestate`; NULL for the others). Returns one row: the first position and the time recorded, or what
-- refused the command (`refusal`, one of `AppendRefusal`'s codes, and its JSON detail), as a
-- batch returns it; a refused command wrote nothing.
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
    p_outcome jsonb,
    p_traceparent text DEFAULT NULL,
    p_tracestate text DEFAULT NULL
) RETURNS TABLE (first_position bigint, recorded_at timestamptz, refusal text, refusal_detail text)
LANGUAGE plpgsql AS $$
DECLARE
    v_version integer;
    v_tid tid;
    v_app_stripe smallint;
    v_global_stripe smallint;
    -- When the stream began (its events' partition); NULL for one that begins now.
    v_stream_recorded_at timestamptz;
BEGIN
    -- The gate that a replay closes comes first, as in every append.
    LOCK TABLE liveline_append_gate IN ROW EXCLUSIVE MODE;
    IF p_expected_version = 0 THEN
        SELECT a.version INTO v_version FROM activities a WHERE a.app_id = p_app_id AND a.activity_id = p_activity_id;
        IF v_version IS NULL THEN
            SELECT a.app_stripe, a.global_stripe, a.refusal, a.refusal_detail
                INTO v_app_stripe, v_global_stripe, refusal, refusal_detail
                FROM liveline_admit_opening(p_app_id, p_row ->> 'device_id') AS a;
        END IF;
    ELSE
        SELECT a.version, a.ctid, a.app_stripe, a.global_stripe, a.stream_recorded_at
            INTO v_version, v_tid, v_app_stripe, v_global_stripe, v_stream_recorded_at
            FROM activities a WHERE a.app_id = p_app_id AND a.activity_id = p_activity_id FOR UPDATE;
    END IF;
    IF v_version IS DISTINCT FROM nullif(p_expected_version, 0) THEN
        refusal := 'LL409';
        refusal_detail := json_build_object('actual', v_version)::text;
    END IF;
    IF refusal IS NOT NULL THEN
        RETURN NEXT;
        RETURN;
    END IF;

    IF p_expected_version = 0 THEN
        PERFORM liveline_insert_openings(ARRAY[1], ARRAY[v_app_stripe], ARRAY[v_global_stripe], ARRAY[p_row]);
    ELSE
        IF p_open_change = -1 THEN
            PERFORM liveline_lock_cap_rows(ARRAY[1], '{}', ARRAY[p_app_id], ARRAY[p_row],
                ARRAY[v_app_stripe], ARRAY[v_global_stripe]);
            PERFORM liveline_free_stripes(ARRAY[1], ARRAY[p_app_id], ARRAY[p_row],
                ARRAY[v_app_stripe], ARRAY[v_global_stripe]);
        END IF;
        PERFORM liveline_update_projections(ARRAY[1], ARRAY[v_tid], ARRAY[p_row], ARRAY[p_open_change]);
    END IF;
    first_position := (liveline_write_events(ARRAY[1], ARRAY[p_app_id], ARRAY[p_activity_id],
        ARRAY[p_expected_version], ARRAY[v_stream_recorded_at], ARRAY[cardinality(p_types)], p_types, p_data, p_causes,
        p_occurred_at, ARRAY[p_idempotency_key], ARRAY[p_request_sha256], ARRAY[p_outcome],
        CASE WHEN p_traceparent IS NOT NULL THEN ARRAY[p_traceparent] END, ARRAY[p_tracestate]))[1];
    recorded_at := now();
    RETURN NEXT;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_append TO liveline_service;

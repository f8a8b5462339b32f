-- The tail of every append: the commands written (`p_written`, command numbers, in the order
-- they take positions) take the transaction's next positions, and their events and idempotency
-- keys are written. A command's events are its `p_event_counts` entries of the event arrays, in
-- command order; they go to the partition of the time its stream began
-- (`p_stream_recorded_ats`, per command; NULL for a stream that begins now). A command of a
-- sampled request has its trace context kept with each of its events (`p_traceparents`,
-- `p_tracestates`, per command: NULL for the others, or the arrays NULL when none is sampled).
-- Returns, per command number, the first position it took (NULL for a command not written).
CREATE OR REPLACE FUNCTION liveline_write_events(
    p_written integer[],
    p_app_ids text[],
    p_activity_ids text[],
    p_expected_versions integer[],
    p_stream_recorded_ats timestamptz[],
    p_event_counts integer[],
    p_types text[],
    p_data jsonb[],
    p_causes text[],
    p_occurred_at timestamptz[],
    p_idempotency_keys text[],
    p_request_sha256s bytea[],
    p_outcomes jsonb[],
    p_traceparents text[],
    p_tracestates text[]
) RETURNS bigint[]
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    -- Per command, its first position; per event, its command and its place among the command's.
    v_positions bigint[] := '{}';
    v_commands integer[] := '{}';
    v_offsets integer[] := '{}';
    v_position bigint;
    v_total integer := 0;
    i integer;
    k integer;
BEGIN
    FOR i IN 1 .. cardinality(p_event_counts) LOOP
        FOR k IN 0 .. p_event_counts[i] - 1 LOOP
            v_commands := v_commands || i;
            v_offsets := v_offsets || k;
        END LOOP;
    END LOOP;
    FOREACH i IN ARRAY p_written LOOP
        v_total := v_total + p_event_counts[i];
    END LOOP;
    v_position := liveline_take_positions(v_total);
    FOREACH i IN ARRAY p_written LOOP
        v_positions[i] := v_position;
        v_position := v_position + p_event_counts[i];
    END LOOP;
    INSERT INTO events (position, transaction_id, app_id, activity_id, version, type, data, caused_by, occurred_at,
                        stream_recorded_at)
        SELECT v_positions[e.c] + e.k, pg_current_xact_id(), p_app_ids[e.c], p_activity_ids[e.c],
               p_expected_versions[e.c] + e.k + 1, e.type, e.data, e.cause::event_cause, e.occurred_at,
               coalesce(p_stream_recorded_ats[e.c], now())
        FROM unnest(v_commands, v_offsets, p_types, p_data, p_causes, p_occurred_at)
            AS e(c, k, type, data, cause, occurred_at)
        WHERE v_positions[e.c] IS NOT NULL;
    IF p_traceparents IS NOT NULL THEN
        INSERT INTO event_traces ("position", recorded_at, traceparent, tracestate)
            SELECT v_positions[e.c] + e.k, now(), p_traceparents[e.c], p_tracestates[e.c]
            FROM unnest(v_commands, v_offsets) AS e(c, k)
            WHERE v_positions[e.c] IS NOT NULL AND p_traceparents[e.c] IS NOT NULL;
    END IF;
    IF array_remove(p_idempotency_keys, NULL) <> '{}' THEN
        INSERT INTO idempotency_keys (app_id, idempotency_key, request_sha256, activity_id, outcome)
            SELECT p_app_ids[p.i], p_idempotency_keys[p.i], p_request_sha256s[p.i], p_activity_ids[p.i], p_outcomes[p.i]
            FROM unnest(p_written) AS p(i)
            WHERE p_idempotency_keys[p.i] IS NOT NULL;
    END IF;
    RETURN v_positions;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_write_events TO liveline_service;

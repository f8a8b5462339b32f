-- Appends a batch of commands in one statement: the appends to existing activities (closings
-- among them) written together, the closings' stripes freed together; openings admitted together
-- when they all fit, else one by one by `liveline_admit_opening`, and written together; the
-- commands refused before the append recorded with their idempotency keys. Returns, per command
-- in order, its first position or what refused it. The commands of sampled requests have their
-- trace contexts kept with their events (`p_traceparents`, `p_tracestates`: NULL when none is).
--
-- Its steps are functions of their own, each saying what it does and why: those only a batch
-- takes (`liveline_batch_*`), and those every append takes, a lone one (`liveline_append`) too:
-- admission (`liveline_admit_opening`), freeing a closing's stripes (`liveline_lock_cap_rows`,
-- `liveline_free_stripes`), the projection rows (`liveline_insert_openings`,
-- `liveline_update_projections`) and the tail (`liveline_write_events`).
--
-- Concurrent batches must not wait for each other in a cycle, so a batch takes every lock it may
-- wait for first, each kind sorted, in an order all batches and single commands share: the
-- activities and keys it creates (`lock_keys`), the existing activities (`lock_activities`), then
-- the app stripes, the devices and the global stripes that closings free (`admit_together`, which
-- does not wait, or else `liveline_lock_cap_rows`). Then it frees the closings' stripes, admits the
-- openings and writes the rest.
--
-- Nothing it locks is updated in a subtransaction: such a row version gets a multixact, which
-- every scan that meets it looks up until vacuum removes it. So each command's refusal is decided
-- before anything is written (a version that moved, a cap reached), never raised and caught; the
-- one block, `admit_together`, updates only what it locked itself.
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
    p_rejected_outcomes jsonb[],
    p_traceparents text[] DEFAULT NULL,
    p_tracestates text[] DEFAULT NULL
) RETURNS TABLE (first_position bigint, recorded_at timestamptz, refusal text, refusal_detail text)
LANGUAGE plpgsql
-- Its statements and its steps' look rows up by key whatever the arrays hold: one plan each per
-- session, not a new plan per batch for each size of array.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_count integer := coalesce(cardinality(p_app_ids), 0);
    -- Per command: its activity's version, row address and stripes now (locked), its first
    -- position once written, and what refused it.
    v_locked record;
    v_positions bigint[] := '{}';
    v_refusals text[] := '{}';
    v_details text[] := '{}';
    -- The appends to existing activities whose version matches, and the closings among them; the
    -- openings, the versions of those whose activity exists already, and those admitted with the
    -- stripes they took.
    v_appended integer[] := '{}';
    v_closed integer[] := '{}';
    v_openings integer[] := '{}';
    v_existing integer[];
    v_opened integer[] := '{}';
    v_opened_app_stripes smallint[];
    v_opened_global_stripes smallint[];
    v_admission record;
    v_written integer[];
    i integer;
BEGIN
    -- The gate that a replay closes comes first, as in every append.
    LOCK TABLE liveline_append_gate IN ROW EXCLUSIVE MODE;
    IF v_count + cardinality(p_rejected_app_ids) > 1 THEN
        PERFORM liveline_batch_lock_keys(p_app_ids, p_activity_ids, p_expected_versions,
            p_app_ids || p_rejected_app_ids, p_idempotency_keys || p_rejected_keys);
    END IF;
    IF cardinality(p_rejected_app_ids) > 0 THEN
        PERFORM liveline_batch_record_rejections(p_rejected_app_ids, p_rejected_activity_ids, p_rejected_commands,
            p_rejected_codes, p_rejected_details, p_rejected_at, p_rejected_keys, p_rejected_request_sha256s,
            p_rejected_outcomes);
    END IF;
    IF v_count = 0 THEN
        RETURN;
    END IF;

    -- Sort the commands: appends to existing activities whose version matches are written
    -- together (the closings among them free their stripes), those whose version moved are
    -- refused; the openings are admitted below, together or one by one.
    v_locked := liveline_batch_lock_activities(p_app_ids, p_activity_ids, p_expected_versions);
    FOR i IN 1 .. v_count LOOP
        IF p_expected_versions[i] = 0 THEN
            v_openings := v_openings || i;
        ELSIF v_locked.versions[i] = p_expected_versions[i] THEN
            v_appended := v_appended || i;
            IF p_open_changes[i] = -1 THEN
                v_closed := v_closed || i;
            END IF;
        ELSE
            v_refusals[i] := 'LL409';
            v_details[i] := json_build_object('actual', v_locked.versions[i])::text;
        END IF;
    END LOOP;

    IF cardinality(v_openings) > 0 THEN
        -- The versions of the openings' activities that exist already (by opening): refused.
        SELECT array_agg(l.version ORDER BY o.n) INTO v_existing
            FROM unnest(v_openings) WITH ORDINALITY AS o(i, n)
            LEFT JOIN LATERAL (SELECT a.version FROM activities a
                WHERE a.app_id = p_app_ids[o.i] AND a.activity_id = p_activity_ids[o.i] OFFSET 0) AS l ON true;
        -- Together, when the batch frees no stripe (it would hold the closings' stripes before
        -- these) and none of the activities exists.
        IF cardinality(v_closed) = 0 AND array_remove(v_existing, NULL) = '{}' THEN
            SELECT * INTO v_opened_app_stripes, v_opened_global_stripes
                FROM liveline_batch_admit_together(v_openings, p_app_ids, p_rows);
            IF v_opened_app_stripes IS NOT NULL THEN
                v_opened := v_openings;
            END IF;
        END IF;
    END IF;
    IF cardinality(v_closed) > 0 OR cardinality(v_openings) > cardinality(v_opened) THEN
        PERFORM liveline_lock_cap_rows(v_closed, v_openings, p_app_ids, p_rows, v_locked.app_stripes,
            v_locked.global_stripes);
    END IF;
    IF cardinality(v_closed) > 0 THEN
        PERFORM liveline_free_stripes(v_closed, p_app_ids, p_rows, v_locked.app_stripes,
            v_locked.global_stripes);
    END IF;

    -- The openings that did not fit together, after the closings, admitted one after the other.
    IF cardinality(v_openings) > cardinality(v_opened) THEN
        v_opened_app_stripes := '{}';
        v_opened_global_stripes := '{}';
        FOR v_admission IN SELECT * FROM liveline_batch_admit_one_by_one(v_openings, v_existing, p_app_ids, p_rows)
        LOOP
            IF v_admission.refusal IS NULL THEN
                v_opened := v_opened || v_admission.i;
                v_opened_app_stripes := v_opened_app_stripes || v_admission.app_stripe;
                v_opened_global_stripes := v_opened_global_stripes || v_admission.global_stripe;
            ELSE
                v_refusals[v_admission.i] := v_admission.refusal;
                v_details[v_admission.i] := v_admission.refusal_detail;
            END IF;
        END LOOP;
    END IF;
    IF cardinality(v_opened) > 0 THEN
        PERFORM liveline_insert_openings(v_opened, v_opened_app_stripes, v_opened_global_stripes, p_rows);
    END IF;

    -- The appends and the admitted openings are written: their projection rows, then their events
    -- and idempotency keys, at the transaction's next positions. The closings come first, in
    -- command order, then the others in command order: the openings were admitted on the room
    -- the closings made, and the log says so (a fold of it never counts them open together).
    SELECT array_agg(w.i ORDER BY p_open_changes[w.i] <> -1, w.i) INTO v_written
        FROM unnest(v_appended || v_opened) AS w(i);
    IF v_written IS NOT NULL THEN
        IF cardinality(v_appended) > 0 THEN
            PERFORM liveline_update_projections(v_appended, v_locked.tids, p_rows, p_open_changes);
        END IF;
        v_positions := liveline_write_events(v_written, p_app_ids, p_activity_ids, p_expected_versions,
            v_locked.stream_recorded_ats, p_event_counts, p_types, p_data, p_causes, p_occurred_at, p_idempotency_keys,
            p_request_sha256s, p_outcomes, p_traceparents, p_tracestates);
    END IF;

    RETURN QUERY SELECT v_positions[c.i], CASE WHEN v_positions[c.i] IS NOT NULL THEN now() END,
            v_refusals[c.i], v_details[c.i]
        FROM generate_series(1, v_count) AS c(i) ORDER BY c.i;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_append_batch TO liveline_service;

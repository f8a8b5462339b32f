-- A step of `liveline_append_batch`, for a batch with closings, or with openings that
-- `liveline_batch_claim_stripes` found no free stripes for: locks, each kind sorted, in the order
-- every batch and single command shares, the app stripes (all of the openings' apps' stripes; the
-- closings' own), the devices (of closings and openings) and the global stripes the closings free.
-- Openings pick their global stripes later with SKIP LOCKED, which does not wait.
--
-- An opening alone takes whichever of its app's stripes has room, waiting for one if all are
-- held: a batch that waited so while holding another stripe of the app could wait in a cycle.
-- So such a batch holds all of its openings' apps' stripes first.
CREATE OR REPLACE FUNCTION liveline_batch_lock_cap_rows(
    p_app_ids text[],
    p_activity_ids text[],
    p_rows jsonb[],
    p_open_changes integer[],
    p_expected_versions integer[]
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_apps text[];
    v_devices text[];
    v_app_stripes smallint[];
    v_global_stripes smallint[];
BEGIN
    -- Closings (open change -1) with their activities' stripes; openings (version 0) with none.
    SELECT array_agg(c.app_id), array_agg(c.row ->> 'device_id'), array_agg(a.app_stripe), array_agg(a.global_stripe)
        INTO v_apps, v_devices, v_app_stripes, v_global_stripes
        FROM unnest(p_app_ids, p_activity_ids, p_rows, p_open_changes, p_expected_versions)
            AS c(app_id, activity_id, row, change, version)
        LEFT JOIN LATERAL (SELECT app_stripe, global_stripe FROM activities a
            WHERE c.change = -1 AND a.app_id = c.app_id AND a.activity_id = c.activity_id OFFSET 0) AS a ON true
        WHERE c.change = -1 OR c.version = 0;
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
END
$$;
GRANT EXECUTE ON ROUTINE liveline_batch_lock_cap_rows TO liveline_service;

-- A step of every append that closes activities (`p_closings`, command numbers), and of a batch
-- that opens some (`p_openings`) that could not be admitted together: locks, each kind
-- sorted, in the order every batch and single command shares, the app stripes (all of the
-- openings' apps' stripes; the closings' own), the devices (of closings and openings) and the
-- global stripes the closings free. Openings pick their global stripes later with SKIP LOCKED,
-- which does not wait. The closings' stripes are those their activities hold
-- (`p_app_stripes`, `p_global_stripes`, per command, as `liveline_batch_lock_activities`, or
-- a lone append, found them).
--
-- An opening alone takes whichever of its app's stripes has room, waiting for one if all are
-- held: a batch that waited so while holding another stripe of the app could wait in a cycle.
-- So such a batch holds all of its openings' apps' stripes first.
CREATE OR REPLACE FUNCTION liveline_lock_cap_rows(
    p_closings integer[],
    p_openings integer[],
    p_app_ids text[],
    p_rows jsonb[],
    p_app_stripes smallint[],
    p_global_stripes smallint[]
) RETURNS void
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    PERFORM FROM (
            SELECT s.app_id, s.stripe FROM app_open_stripes s
                WHERE s.app_id = ANY (SELECT p_app_ids[o.i] FROM unnest(p_openings) AS o(i))
            UNION
            SELECT p_app_ids[c.i], p_app_stripes[c.i] FROM unnest(p_closings) AS c(i)
            ORDER BY 1, 2
        ) AS c(app_id, stripe),
        LATERAL (SELECT FROM app_open_stripes s WHERE s.app_id = c.app_id AND s.stripe = c.stripe
            FOR UPDATE) AS locked;
    PERFORM FROM (SELECT DISTINCT p_app_ids[c.i], p_rows[c.i] ->> 'device_id'
                FROM unnest(p_closings || p_openings) AS c(i)
                WHERE p_rows[c.i] ->> 'device_id' IS NOT NULL
                ORDER BY 1, 2) AS c(app_id, device_id),
        LATERAL (SELECT FROM device_open_counts d WHERE d.app_id = c.app_id AND d.device_id = c.device_id
            FOR UPDATE) AS locked;
    PERFORM FROM (SELECT DISTINCT p_global_stripes[c.i] FROM unnest(p_closings) AS c(i) ORDER BY 1) AS c(stripe),
        LATERAL (SELECT FROM global_open_stripes s WHERE s.stripe = c.stripe FOR UPDATE) AS locked;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_lock_cap_rows TO liveline_service;

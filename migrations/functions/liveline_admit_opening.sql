-- The one admission of an opening: a new activity of `p_app_id` (on `p_device_id`, when the
-- request names one) must fit the app's cap, the app's per-device cap and the global cap. When it
-- fits, it is counted — one of the app's stripes, the device's row, one global stripe — and the
-- stripes it took are returned; when it does not, nothing is counted and `refusal` is the code
-- of the cap reached (LL001 app, LL003 device, LL002 global) with its detail (`limit`, `count`).
-- Every append returns that refusal for that opening alone (`liveline_append`,
-- `liveline_append_batch`), and a batch goes on with its other commands.
--
-- Locks are taken in one order (app stripe, device, global stripe) by every path, so they cannot
-- deadlock; what this opening locked stays locked until the transaction ends, refused or not.
-- Any of the app's stripes with room that no one else holds; if all those are held, wait for one
-- and take it if it still has room once its holder commits. The same for the global stripes.
CREATE OR REPLACE FUNCTION liveline_admit_opening(
    p_app_id text,
    p_device_id text,
    OUT app_stripe smallint,
    OUT global_stripe smallint,
    OUT refusal text,
    OUT refusal_detail text
)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_device_limit integer;
BEGIN
    SELECT s.stripe INTO app_stripe FROM app_open_stripes s
        WHERE s.app_id = p_app_id AND s.open < s.capacity ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        SELECT s.stripe INTO app_stripe FROM app_open_stripes s
            WHERE s.app_id = p_app_id AND s.open < s.capacity ORDER BY s.stripe LIMIT 1 FOR UPDATE;
    END IF;
    IF NOT FOUND THEN
        refusal := 'LL001';
        refusal_detail := json_build_object(
            'limit', (SELECT a.max_open FROM apps a WHERE a.app_id = p_app_id),
            'count', (SELECT sum(s.open) FROM app_open_stripes s WHERE s.app_id = p_app_id))::text;
        RETURN;
    END IF;
    IF p_device_id IS NOT NULL THEN
        -- The per-device cap is read now that one of the app's stripes is held: a change of the
        -- app's caps locks all its stripes first, so it has either committed (and is seen here)
        -- or waits for this opening.
        SELECT a.max_open_per_device INTO v_device_limit FROM apps a WHERE a.app_id = p_app_id;
        INSERT INTO device_open_counts AS d (app_id, device_id, open) VALUES (p_app_id, p_device_id, 1)
        ON CONFLICT (app_id, device_id) DO UPDATE SET open = d.open + 1
            WHERE v_device_limit IS NULL OR d.open < v_device_limit;
        IF NOT FOUND THEN
            app_stripe := NULL;
            refusal := 'LL003';
            refusal_detail := json_build_object('limit', v_device_limit,
                'count', (SELECT d.open FROM device_open_counts d WHERE d.app_id = p_app_id AND d.device_id = p_device_id)
            )::text;
            RETURN;
        END IF;
    END IF;
    SELECT s.stripe INTO global_stripe FROM global_open_stripes s
        WHERE s.open < s.capacity ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        SELECT s.stripe INTO global_stripe FROM global_open_stripes s
            WHERE s.open < s.capacity ORDER BY s.stripe LIMIT 1 FOR UPDATE;
    END IF;
    IF NOT FOUND THEN
        IF p_device_id IS NOT NULL THEN
            UPDATE device_open_counts d SET open = d.open - 1 WHERE d.app_id = p_app_id AND d.device_id = p_device_id;
        END IF;
        app_stripe := NULL;
        refusal := 'LL002';
        refusal_detail := json_build_object(
            'limit', (SELECT l.global_max_open FROM service_limits l),
            'count', (SELECT sum(s.open) FROM global_open_stripes s))::text;
        RETURN;
    END IF;
    UPDATE app_open_stripes s SET open = s.open + 1 WHERE s.app_id = p_app_id AND s.stripe = app_stripe;
    UPDATE global_open_stripes s SET open = s.open + 1 WHERE s.stripe = global_stripe;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_admit_opening TO liveline_service;

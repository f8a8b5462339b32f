-- A step of `liveline_append_batch`, for a batch whose only cap changes are openings
-- (`p_openings`, command numbers) of activities that do not exist: admits them together, when
-- they all fit. Most batches of openings do: the batch takes, without waiting, one stripe of each
-- app with room for all of the app's openings, their devices stay under the cap with all of them,
-- and one global stripe that no one else holds has room for all. Then admitting them one after
-- the other would admit every one, so they are counted together; the apps' stripes are held, so
-- this stays true until the batch commits. So concurrent batches open side by side, each on
-- stripes of its own. Each device's count takes its openings as its row is created or locked
-- (sorted, the order every opening takes them in).
--
-- Returns, per opening, the app stripe and the global stripe it took; or NULLs, holding and
-- counting nothing, when they do not all fit (the batch then waits for all of its apps' stripes,
-- `liveline_lock_cap_rows`, and admits them one by one). Giving back what was taken is
-- rolling back the block that took it: PL/pgSQL releases a row lock no other way. So the block
-- raises `LL010` when they do not fit, and catches it. What it locks it also updates, in that
-- one block: a row locked in a subtransaction and updated in its parent gets a multixact.
CREATE OR REPLACE FUNCTION liveline_batch_admit_together(
    p_openings integer[],
    p_app_ids text[],
    p_rows jsonb[],
    OUT app_stripes smallint[],
    OUT global_stripes smallint[]
)
LANGUAGE plpgsql AS $$
DECLARE
    v_apps text[];
    v_stripes smallint[];
    v_openings integer[];
    v_fit boolean;
    v_global_stripe smallint;
BEGIN
    -- Per app, a stripe with room for all of its openings that no one else holds.
    SELECT array_agg(c.app_id), array_agg(s.stripe), array_agg(c.openings) INTO v_apps, v_stripes, v_openings
        FROM (SELECT p_app_ids[o.i], count(*)::integer FROM unnest(p_openings) AS o(i) GROUP BY 1) AS c(app_id, openings)
        LEFT JOIN LATERAL (SELECT s.stripe FROM app_open_stripes s
            WHERE s.app_id = c.app_id AND s.capacity - s.open >= c.openings
            ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED) AS s ON true;
    IF array_position(v_stripes, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'no free stripe with room for the openings' USING ERRCODE = 'LL010';
    END IF;
    UPDATE app_open_stripes AS s SET open = s.open + t.openings
        FROM unnest(v_apps, v_stripes, v_openings) AS t(app_id, stripe, openings)
        WHERE s.app_id = t.app_id AND s.stripe = t.stripe;

    WITH wanted AS (
        SELECT p_app_ids[o.i] AS app_id, p_rows[o.i] ->> 'device_id' AS device_id, count(*)::integer AS n
            FROM unnest(p_openings) AS o(i)
            WHERE p_rows[o.i] ->> 'device_id' IS NOT NULL
            GROUP BY 1, 2
    ), counted AS (
        INSERT INTO device_open_counts AS d (app_id, device_id, open)
            SELECT * FROM wanted ORDER BY 1, 2
        ON CONFLICT (app_id, device_id) DO UPDATE SET open = d.open + excluded.open
        RETURNING d.app_id::text, d.device_id, d.open
    )
    SELECT coalesce(bool_and(a.max_open_per_device IS NULL OR c.open <= a.max_open_per_device), true) INTO v_fit
        FROM counted AS c,
        LATERAL (SELECT a.max_open_per_device FROM apps a WHERE a.app_id = c.app_id OFFSET 0) AS a;
    IF NOT v_fit THEN
        RAISE EXCEPTION 'a device has no room for the openings' USING ERRCODE = 'LL010';
    END IF;

    SELECT s.stripe INTO v_global_stripe FROM global_open_stripes s
        WHERE s.capacity - s.open >= cardinality(p_openings)
        ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no free global stripe with room for the openings' USING ERRCODE = 'LL010';
    END IF;
    UPDATE global_open_stripes AS s SET open = s.open + cardinality(p_openings) WHERE s.stripe = v_global_stripe;

    SELECT array_agg(v_stripes[array_position(v_apps, p_app_ids[o.i])] ORDER BY o.n),
           array_agg(v_global_stripe ORDER BY o.n)
        INTO app_stripes, global_stripes
        FROM unnest(p_openings) WITH ORDINALITY AS o(i, n);
EXCEPTION
    WHEN SQLSTATE 'LL010' THEN
        app_stripes := NULL;
        global_stripes := NULL;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_batch_admit_together TO liveline_service;

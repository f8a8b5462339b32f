-- A step of `liveline_append_batch`: admits a batch's openings (`p_openings`, command numbers)
-- together, when they all fit. Most batches of openings do: the batch holds one stripe of each app
-- with room for all of the app's openings (`liveline_batch_claim_stripes`: `p_stripe_*`, by app),
-- none of the activities exists, their devices stay under the cap with all of them, and one global
-- stripe that no one else holds has room for all. Then admitting them one after the other would
-- admit every one, so they are counted together; the apps' stripes are held, so this stays true
-- until the batch commits. Each device's count takes its openings as its row is created or locked
-- (sorted, the order every opening takes them in).
--
-- Returns, per opening, the app stripe and the global stripe it took; or NULLs, counting nothing,
-- when they do not all fit (the devices' rows stay locked, for admitting them one by one).
CREATE OR REPLACE FUNCTION liveline_batch_admit_together(
    p_openings integer[],
    p_app_ids text[],
    p_rows jsonb[],
    p_stripe_app_ids text[],
    p_stripes smallint[],
    p_stripe_tids tid[],
    p_stripe_openings integer[],
    OUT app_stripes smallint[],
    OUT global_stripes smallint[]
)
LANGUAGE plpgsql AS $$
DECLARE
    v_fit boolean;
    v_device_apps text[];
    v_device_ids text[];
    v_device_taken integer[];
    v_global_stripe smallint;
BEGIN
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
    SELECT array_agg(w.app_id), array_agg(w.device_id), array_agg(w.n),
           coalesce(bool_and(a.max_open_per_device IS NULL OR c.open <= a.max_open_per_device), true)
        INTO v_device_apps, v_device_ids, v_device_taken, v_fit
        FROM wanted AS w
        JOIN counted AS c ON c.app_id = w.app_id AND c.device_id = w.device_id,
        LATERAL (SELECT a.max_open_per_device FROM apps a WHERE a.app_id = w.app_id OFFSET 0) AS a;
    IF v_fit THEN
        SELECT s.stripe INTO v_global_stripe FROM global_open_stripes s
            WHERE s.capacity - s.open >= cardinality(p_openings)
            ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED;
        v_fit := FOUND;
    END IF;
    IF NOT v_fit THEN
        UPDATE device_open_counts AS d SET open = d.open - t.n
            FROM unnest(v_device_apps, v_device_ids, v_device_taken) AS t(app_id, device_id, n)
            WHERE d.app_id = t.app_id AND d.device_id = t.device_id;
        RETURN;
    END IF;
    UPDATE app_open_stripes AS s SET open = s.open + t.taken
        FROM unnest(p_stripe_tids, p_stripe_openings) AS t(tid, taken)
        WHERE s.ctid = t.tid;
    UPDATE global_open_stripes AS s SET open = s.open + cardinality(p_openings)
        WHERE s.stripe = v_global_stripe;
    SELECT array_agg(p_stripes[array_position(p_stripe_app_ids, p_app_ids[o.i])] ORDER BY o.n),
           array_agg(v_global_stripe ORDER BY o.n)
        INTO app_stripes, global_stripes
        FROM unnest(p_openings) WITH ORDINALITY AS o(i, n);
END
$$;
GRANT EXECUTE ON ROUTINE liveline_batch_admit_together TO liveline_service;

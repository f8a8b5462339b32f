-- A step of every append that closes activities: the closings it writes (`p_closed`, command
-- numbers, in order) stop counting. Each frees its app stripe, its device's count and its global
-- stripe (`p_app_stripes`, `p_global_stripes`: per command, as the append found them), all of
-- them locked already (`liveline_lock_cap_rows`). While a lowered cap leaves excess, a closing
-- retires one unit of it with its stripe's share instead of making room, as if the closings ran
-- one after the other: the app's first closings in command order retire the app's excess, the
-- append's first closings the service's. The apps' rows are locked only while they record
-- excess, in key order, after the stripes, as a cap change takes them.
--
-- All of it runs in the append's own transaction, not in a block of its own: a row locked by a
-- transaction and then updated in one of its subtransactions gets a multixact for its locker,
-- which every later scan of that row version has to look up.
CREATE OR REPLACE FUNCTION liveline_free_stripes(
    p_closed integer[],
    p_app_ids text[],
    p_rows jsonb[],
    p_app_stripes smallint[],
    p_global_stripes smallint[]
) RETURNS void
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_excess_apps text[];
    v_app_excesses integer[];
    v_service_excess integer;
BEGIN
    SELECT array_agg(a.app_id), array_agg(a.open_excess) INTO v_excess_apps, v_app_excesses
        FROM (SELECT a.app_id::text, a.open_excess FROM apps a
                WHERE a.app_id = ANY (SELECT p_app_ids[c.i] FROM unnest(p_closed) AS c(i)) AND a.open_excess > 0
                ORDER BY a.app_id FOR UPDATE) AS a;
    SELECT l.open_excess INTO v_service_excess FROM service_limits l WHERE l.open_excess > 0 FOR UPDATE;

    WITH closing AS (
        SELECT p_app_ids[c.i] AS app_id, p_rows[c.i] ->> 'device_id' AS device_id,
               p_app_stripes[c.i] AS app_stripe, p_global_stripes[c.i] AS global_stripe,
               row_number() OVER (PARTITION BY p_app_ids[c.i] ORDER BY c.n)
                   <= coalesce(v_app_excesses[array_position(v_excess_apps, p_app_ids[c.i])], 0) AS retires_app_excess,
               row_number() OVER (ORDER BY c.n) <= coalesce(v_service_excess, 0) AS retires_service_excess
            FROM unnest(p_closed) WITH ORDINALITY AS c(i, n)
    ), app_stripes_freed AS (
        UPDATE app_open_stripes AS s SET open = s.open - f.closed, capacity = s.capacity - f.retired
            FROM (SELECT app_id, app_stripe, count(*), count(*) FILTER (WHERE retires_app_excess)
                    FROM closing GROUP BY 1, 2) AS f(app_id, stripe, closed, retired)
            WHERE s.app_id = f.app_id AND s.stripe = f.stripe
    ), devices_freed AS (
        UPDATE device_open_counts AS d SET open = d.open - f.closed
            FROM (SELECT app_id, device_id, count(*) FROM closing WHERE device_id IS NOT NULL GROUP BY 1, 2)
                AS f(app_id, device_id, closed)
            WHERE d.app_id = f.app_id AND d.device_id = f.device_id
    )
    UPDATE global_open_stripes AS s SET open = s.open - f.closed, capacity = s.capacity - f.retired
        FROM (SELECT global_stripe, count(*), count(*) FILTER (WHERE retires_service_excess)
                FROM closing GROUP BY 1) AS f(stripe, closed, retired)
        WHERE s.stripe = f.stripe;

    IF v_excess_apps IS NOT NULL THEN
        UPDATE apps AS a SET open_excess = a.open_excess - least(a.open_excess, f.closed)
            FROM (SELECT p_app_ids[c.i], count(*) FROM unnest(p_closed) AS c(i) GROUP BY 1) AS f(app_id, closed)
            WHERE a.app_id = f.app_id AND f.app_id = ANY (v_excess_apps);
    END IF;
    IF v_service_excess IS NOT NULL THEN
        UPDATE service_limits SET open_excess = open_excess - least(open_excess, cardinality(p_closed));
    END IF;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_free_stripes TO liveline_service;

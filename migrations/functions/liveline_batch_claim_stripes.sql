-- A step of `liveline_append_batch`, for a batch whose only cap changes are openings: tries,
-- without waiting, to take for each app one of its stripes with room for all of the app's
-- openings in the batch, so that concurrent batches open side by side, each on stripes of its
-- own. Returns, per app (sorted), the stripe taken, its row address and the app's openings; or
-- NULLs, holding nothing, when some app has no such stripe free (the batch then waits for all of
-- its apps' stripes, `liveline_batch_lock_cap_rows`).
--
-- Giving back what was taken is rolling back the block that took it: PL/pgSQL releases a row
-- lock no other way. So the block raises `LL010` when a stripe is missing, and catches it.
CREATE OR REPLACE FUNCTION liveline_batch_claim_stripes(
    p_app_ids text[],
    p_expected_versions integer[],
    OUT app_ids text[],
    OUT stripes smallint[],
    OUT tids tid[],
    OUT openings integer[]
)
LANGUAGE plpgsql AS $$
BEGIN
    SELECT array_agg(c.app_id ORDER BY c.app_id), array_agg(s.stripe ORDER BY c.app_id),
           array_agg(s.tid ORDER BY c.app_id), array_agg(c.openings ORDER BY c.app_id)
        INTO app_ids, stripes, tids, openings
        FROM (SELECT p_app_ids[c.n], count(*) FROM unnest(p_expected_versions) WITH ORDINALITY AS c(version, n)
                WHERE c.version = 0 GROUP BY 1) AS c(app_id, openings)
        LEFT JOIN LATERAL (SELECT s.stripe, s.ctid AS tid FROM app_open_stripes s
            WHERE s.app_id = c.app_id AND s.capacity - s.open >= c.openings
            ORDER BY random() LIMIT 1 FOR UPDATE SKIP LOCKED) AS s ON true;
    IF array_position(stripes, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'no free stripe with room for the openings' USING ERRCODE = 'LL010';
    END IF;
EXCEPTION
    WHEN SQLSTATE 'LL010' THEN
        app_ids := NULL;
        stripes := NULL;
        tids := NULL;
        openings := NULL;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_batch_claim_stripes TO liveline_service;

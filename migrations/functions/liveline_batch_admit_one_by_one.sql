-- A step of `liveline_append_batch`, for openings that do not all fit together: admits each
-- opening (`p_openings`, command numbers) alone, in order, by the admission a lone opening goes
-- through (`liveline_admit_opening`); a refusal counts nothing and refuses that opening alone, as
-- does an activity that exists already (`p_existing`, its version, per opening). The openings'
-- devices are created if new and locked first, sorted.
--
-- Returns one row per opening, in order: the stripes it took, or what refused it.
CREATE OR REPLACE FUNCTION liveline_batch_admit_one_by_one(
    p_openings integer[],
    p_existing integer[],
    p_app_ids text[],
    p_rows jsonb[]
) RETURNS TABLE (i integer, app_stripe smallint, global_stripe smallint, refusal text, refusal_detail text)
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO device_open_counts AS d (app_id, device_id)
        SELECT DISTINCT p_app_ids[o.i], p_rows[o.i] ->> 'device_id' FROM unnest(p_openings) AS o(i)
            WHERE p_rows[o.i] ->> 'device_id' IS NOT NULL
            ORDER BY 1, 2
        ON CONFLICT (app_id, device_id) DO UPDATE SET open = d.open;
    FOR k IN 1 .. cardinality(p_openings) LOOP
        i := p_openings[k];
        IF p_existing[k] IS NOT NULL THEN
            SELECT NULL, NULL, 'LL409', json_build_object('actual', p_existing[k])::text
                INTO app_stripe, global_stripe, refusal, refusal_detail;
        ELSE
            SELECT a.app_stripe, a.global_stripe, a.refusal, a.refusal_detail
                INTO app_stripe, global_stripe, refusal, refusal_detail
                FROM liveline_admit_opening(p_app_ids[i], p_rows[i] ->> 'device_id') AS a;
        END IF;
        RETURN NEXT;
    END LOOP;
END
$$;
GRANT EXECUTE ON ROUTINE liveline_batch_admit_one_by_one TO liveline_service;

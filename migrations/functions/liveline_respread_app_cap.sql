-- Spreads an app's cap over its stripes from what they hold now. Locks the app's stripes (in
-- stripe order), so it waits for openings and closings of the app in flight. Runs when an app is
-- created, when its cap changes, and when replay has recounted. Whoever changes a cap locks the
-- stripes before the app's row, the order closings take them in.
CREATE OR REPLACE FUNCTION liveline_respread_app_cap(p_app_id text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_cap bigint;
    v_open bigint;
    v_room bigint;
BEGIN
    INSERT INTO app_open_stripes (app_id, stripe, capacity)
        SELECT p_app_id, s, 0 FROM generate_series(0, 7) AS s
    ON CONFLICT (app_id, stripe) DO NOTHING;
    PERFORM 1 FROM app_open_stripes WHERE app_id = p_app_id ORDER BY stripe FOR UPDATE;
    SELECT max_open INTO v_cap FROM apps WHERE app_id = p_app_id;
    SELECT sum(open) INTO v_open FROM app_open_stripes WHERE app_id = p_app_id;
    v_room := greatest(v_cap - v_open, 0);
    UPDATE app_open_stripes
        SET capacity = open + v_room / 8 + CASE WHEN stripe < v_room % 8 THEN 1 ELSE 0 END
        WHERE app_id = p_app_id;
    UPDATE apps SET open_excess = greatest(v_open - v_cap, 0)
        WHERE app_id = p_app_id AND open_excess <> greatest(v_open - v_cap, 0);
END
$$;
GRANT EXECUTE ON ROUTINE liveline_respread_app_cap TO liveline_service;

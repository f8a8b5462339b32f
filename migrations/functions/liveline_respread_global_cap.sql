-- Spreads the global cap over the 16 global stripes from what they hold now (as
-- `liveline_respread_app_cap` does for an app).
CREATE OR REPLACE FUNCTION liveline_respread_global_cap() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_cap bigint;
    v_open bigint;
    v_room bigint;
BEGIN
    PERFORM 1 FROM global_open_stripes ORDER BY stripe FOR UPDATE;
    SELECT global_max_open INTO v_cap FROM service_limits;
    SELECT sum(open) INTO v_open FROM global_open_stripes;
    v_room := greatest(v_cap - v_open, 0);
    UPDATE global_open_stripes
        SET capacity = open + v_room / 16 + CASE WHEN stripe < v_room % 16 THEN 1 ELSE 0 END;
    UPDATE service_limits SET open_excess = greatest(v_open - v_cap, 0)
        WHERE open_excess <> greatest(v_open - v_cap, 0);
END
$$;
GRANT EXECUTE ON ROUTINE liveline_respread_global_cap TO liveline_service;

-- Refuses UPDATE and DELETE on the append-only histories of delivery: `deliveries`,
-- `push_token_invalidations`, `delivery_suspensions`, `push_to_start_token_changes`,
-- `reload_token_changes`.
CREATE OR REPLACE FUNCTION liveline_refuse_history_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

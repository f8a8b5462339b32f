-- Refuses UPDATE and DELETE on the append-only histories of delivery: `deliveries`,
-- `push_token_invalidations`, `delivery_suspensions`, `push_to_start_token_changes`,
-- `reload_token_changes`, `reload_deliveries`, `event_traces`.
--
-- But in a transaction that names a pending erasure (the setting `liveline.erasure`): an
-- erasure removes its device's tokens from these histories and rewrites their rows of its
-- activities (docs/decisions/0040). Only Liveline's service role records erasures.
CREATE OR REPLACE FUNCTION liveline_refuse_history_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT FROM erasures
               WHERE id = nullif(current_setting('liveline.erasure', true), '')::bigint AND finished_at IS NULL) THEN
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

-- Refuses UPDATE, DELETE and TRUNCATE on the append-only logs: `events` and `admin_changes`.
CREATE OR REPLACE FUNCTION liveline_refuse_event_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event log is append-only: % on events is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

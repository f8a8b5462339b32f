-- Refuses UPDATE, DELETE and TRUNCATE on the append-only logs: `events` and `admin_changes`.
--
-- One change alone passes, on `events`: an erasure's (docs/decisions/0040). A row may be updated
-- while its activity is a pending target of the erasure its transaction names (the setting
-- `liveline.erasure`), only into its redaction — its `data` made liveline_redacted_event_data with
-- that erasure's reference, every other column as it was.
CREATE OR REPLACE FUNCTION liveline_refuse_event_change() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    v_reference uuid;
BEGIN
    IF TG_OP = 'UPDATE' AND TG_LEVEL = 'ROW' AND TG_TABLE_NAME <> 'admin_changes' THEN
        SELECT e.reference INTO v_reference
        FROM erasures e JOIN erasure_targets t ON t.erasure_id = e.id
        WHERE e.id = nullif(current_setting('liveline.erasure', true), '')::bigint AND e.finished_at IS NULL
          AND t.app_id = OLD.app_id AND t.activity_id = OLD.activity_id AND t.erased_at IS NULL;
        IF FOUND
            AND (NEW.position, NEW.transaction_id, NEW.app_id, NEW.activity_id, NEW.version, NEW.type, NEW.caused_by,
                 NEW.occurred_at, NEW.recorded_at, NEW.stream_recorded_at)
                IS NOT DISTINCT FROM (OLD.position, OLD.transaction_id, OLD.app_id, OLD.activity_id, OLD.version,
                 OLD.type, OLD.caused_by, OLD.occurred_at, OLD.recorded_at, OLD.stream_recorded_at)
            AND NEW.data = liveline_redacted_event_data(OLD.type, OLD.data, v_reference) THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION 'the event log is append-only: % on events is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

-- Records an app's creation, and each change of its settings (from and to), in the admin audit
-- trail.
CREATE OR REPLACE FUNCTION liveline_audit_app() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_before jsonb;
    v_after jsonb := liveline_app_settings(NEW);
    v_changed jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM liveline_record_admin_change('app.created', NEW.app_id, v_after);
        RETURN NULL;
    END IF;
    v_before := liveline_app_settings(OLD);
    -- Only the settings that changed, each as {"from": …, "to": …}.
    SELECT jsonb_object_agg(key, jsonb_build_object('from', v_before -> key, 'to', value)) INTO v_changed
    FROM jsonb_each(v_after) WHERE v_before -> key IS DISTINCT FROM value;
    IF v_changed IS NOT NULL THEN
        PERFORM liveline_record_admin_change('app.updated', NEW.app_id, v_changed);
    END IF;
    RETURN NULL;
END
$$;

-- Records a change of the service-wide limits in the admin audit trail.
CREATE OR REPLACE FUNCTION liveline_audit_limits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.global_max_open IS DISTINCT FROM NEW.global_max_open THEN
        PERFORM liveline_record_admin_change('limits.updated', NULL,
            jsonb_build_object('globalMaxOpen', jsonb_build_object('from', OLD.global_max_open, 'to', NEW.global_max_open)));
    END IF;
    RETURN NULL;
END
$$;

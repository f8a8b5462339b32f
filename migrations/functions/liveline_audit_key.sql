-- Records the creation and the revocation of an API key in the admin audit trail.
CREATE OR REPLACE FUNCTION liveline_audit_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM liveline_record_admin_change('key.issued', NEW.app_id, jsonb_build_object('keyId', NEW.key_id));
    ELSIF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL THEN
        PERFORM liveline_record_admin_change('key.revoked', NEW.app_id, jsonb_build_object('keyId', NEW.key_id));
    END IF;
    RETURN NULL;
END
$$;

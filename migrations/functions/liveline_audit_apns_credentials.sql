-- Records a change of an app's APNs credentials in the admin audit trail (never the key).
CREATE OR REPLACE FUNCTION liveline_audit_apns_credentials() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM liveline_record_admin_change('apns.removed', OLD.app_id, '{}'::jsonb);
        RETURN NULL;
    END IF;
    PERFORM liveline_record_admin_change('apns.set', NEW.app_id, jsonb_build_object(
        'teamId', NEW.team_id, 'keyId', NEW.key_id, 'environment', NEW.environment,
        'publicKeySha256', encode(NEW.public_key_sha256, 'hex')));
    RETURN NULL;
END
$$;

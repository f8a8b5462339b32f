-- APNs token credentials, one set per app (SPEC §7): Apple's team id, the id of the `.p8` signing
-- key, the environment its pushes go to, and the private key itself, sealed with AES-256-GCM
-- under the server's secret (`LIVELINE_SECRET_KEY`) before it reaches the database, bound to its
-- app (a sealed key copied to another app's row does not open). The database never holds the
-- key in the clear; the fingerprint of its public key lets an operator see which key is set.
CREATE TABLE apns_credentials (
    app_id liveline_id PRIMARY KEY REFERENCES apps (app_id),
    team_id text NOT NULL CHECK (team_id ~ '^[A-Z0-9]{10}$'),
    key_id text NOT NULL CHECK (key_id ~ '^[A-Z0-9]{10}$'),
    environment text NOT NULL CHECK (environment IN ('sandbox', 'production')),
    sealed_private_key bytea NOT NULL,
    public_key_sha256 bytea NOT NULL CHECK (length(public_key_sha256) = 32),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Setting and removing credentials are administrative changes, audited like the others (never
-- with the key: its public key's fingerprint names it).
ALTER TABLE admin_changes DROP CONSTRAINT admin_changes_action_check;
ALTER TABLE admin_changes ADD CONSTRAINT admin_changes_action_check CHECK (action IN (
    'app.created', 'app.updated', 'key.issued', 'key.revoked', 'limits.updated', 'apns.set', 'apns.removed'
));

CREATE FUNCTION liveline_audit_apns_credentials() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER apns_credentials_audit AFTER INSERT OR UPDATE OR DELETE ON apns_credentials
    FOR EACH ROW EXECUTE FUNCTION liveline_audit_apns_credentials();

GRANT SELECT, INSERT, UPDATE, DELETE ON apns_credentials TO liveline_service;
-- Dashboards may see which apps can deliver, never the sealed key.
GRANT SELECT (app_id, team_id, key_id, environment, public_key_sha256, updated_at) ON apns_credentials
    TO liveline_dashboard;

-- Broadcast channels (iOS 18): APNs sends one push on a channel to every device subscribed to
-- it. A channel is created through APNs' channel management API, which gives its id; Liveline
-- keeps each of an app's channels with the environment its credentials were in and its message
-- storage policy (fixed by APNs at creation), and when it was deleted (deletion is final at
-- APNs, so a row is never removed and `deleted_at` is set once).
CREATE TABLE broadcast_channels (
    app_id liveline_id NOT NULL REFERENCES apps (app_id),
    channel_id text NOT NULL CHECK (channel_id ~ '^[A-Za-z0-9+/=_-]+$' AND length(channel_id) <= 256),
    environment text NOT NULL CHECK (environment IN ('sandbox', 'production')),
    message_storage_policy text NOT NULL CHECK (message_storage_policy IN ('none', 'mostRecent')),
    created_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz,
    PRIMARY KEY (app_id, channel_id)
);
CREATE INDEX broadcast_channels_open ON broadcast_channels (app_id, created_at) WHERE deleted_at IS NULL;

-- Only the deletion may change a row, once; no row is removed.
CREATE FUNCTION liveline_guard_broadcast_channel() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL
        AND (NEW.app_id, NEW.channel_id, NEW.environment, NEW.message_storage_policy, NEW.created_at)
            = (OLD.app_id, OLD.channel_id, OLD.environment, OLD.message_storage_policy, OLD.created_at)
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'broadcast_channels: a channel is only ever created, then deleted once (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER broadcast_channels_guard BEFORE UPDATE OR DELETE ON broadcast_channels
    FOR EACH ROW EXECUTE FUNCTION liveline_guard_broadcast_channel();

-- Creating and deleting channels are administrative changes, audited like the others.
ALTER TABLE admin_changes DROP CONSTRAINT admin_changes_action_check;
ALTER TABLE admin_changes ADD CONSTRAINT admin_changes_action_check CHECK (action IN (
    'app.created', 'app.updated', 'key.issued', 'key.revoked', 'limits.updated', 'apns.set', 'apns.removed',
    'channel.created', 'channel.deleted'
));

CREATE FUNCTION liveline_audit_broadcast_channel() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM liveline_record_admin_change('channel.created', NEW.app_id, jsonb_build_object(
            'channelId', NEW.channel_id, 'environment', NEW.environment,
            'messageStoragePolicy', NEW.message_storage_policy));
    ELSE
        PERFORM liveline_record_admin_change('channel.deleted', NEW.app_id,
            jsonb_build_object('channelId', NEW.channel_id));
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER broadcast_channels_audit AFTER INSERT OR UPDATE ON broadcast_channels
    FOR EACH ROW EXECUTE FUNCTION liveline_audit_broadcast_channel();

GRANT SELECT, INSERT, UPDATE (deleted_at) ON broadcast_channels TO liveline_service;
GRANT SELECT ON broadcast_channels TO liveline_dashboard;

-- A broadcast's delivery names its channel (a push to a device names its token).
ALTER TABLE deliveries ADD COLUMN channel_id text;

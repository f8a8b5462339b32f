-- Records the creation and the deletion of a broadcast channel in the admin audit trail.
CREATE OR REPLACE FUNCTION liveline_audit_broadcast_channel() RETURNS trigger LANGUAGE plpgsql AS $$
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

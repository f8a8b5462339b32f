-- A broadcast channel is created, then deleted once (its row kept, `deleted_at` set); every
-- other change is refused.
CREATE OR REPLACE FUNCTION liveline_guard_broadcast_channel() RETURNS trigger LANGUAGE plpgsql AS $$
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

-- An event's `data` as an erasure leaves it (docs/event-log.md#erasure): content masked
-- (liveline_masked: `attributes`, `content.contentState`, alerts), tokens `erased`, the device id
-- `erased:<the erasure's reference>`; every other member — dates, priorities, policies, reasons —
-- as it was, so that the stream folds as before. Redacting redacted data changes nothing.
CREATE OR REPLACE FUNCTION liveline_redacted_event_data(p_type text, p_data jsonb, p_reference uuid) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT p_data
        || CASE WHEN p_data ? 'attributes'
            THEN jsonb_build_object('attributes', liveline_masked(p_data -> 'attributes')) ELSE '{}' END
        || CASE WHEN jsonb_typeof(p_data -> 'content') = 'object' THEN jsonb_build_object('content',
                (p_data -> 'content') || jsonb_build_object('contentState', liveline_masked(p_data -> 'content' -> 'contentState')))
            ELSE '{}' END
        || CASE WHEN p_data ? 'alert' THEN jsonb_build_object('alert', liveline_masked(p_data -> 'alert')) ELSE '{}' END
        || CASE WHEN p_data ? 'deviceId'
            THEN jsonb_build_object('deviceId', 'erased:' || p_reference::text) ELSE '{}' END
        || CASE WHEN jsonb_typeof(p_data -> 'remoteStart') = 'object' THEN jsonb_build_object('remoteStart',
                jsonb_build_object('pushToStartToken', 'erased', 'alert', liveline_masked(p_data -> 'remoteStart' -> 'alert')))
            ELSE '{}' END
        || CASE WHEN p_data ? 'pushToken' THEN '{"pushToken": "erased"}'::jsonb ELSE '{}' END
        || CASE WHEN p_type = 'activity.start_unconfirmed' AND p_data ? 'pushToStartToken'
            THEN '{"pushToStartToken": "erased"}'::jsonb ELSE '{}' END
$$;
GRANT EXECUTE ON ROUTINE liveline_redacted_event_data TO liveline_service, liveline_dashboard;

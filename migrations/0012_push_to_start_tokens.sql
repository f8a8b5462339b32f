-- Push-to-start tokens (iOS 17.2+): a device gives one per activity type, and a remote start
-- goes to it. Each change is a row of its own and none is ever changed or removed, so a token's
-- history stays readable (which token a device had when, why it stopped): `registered` (a new
-- token, or a rotation), `removed` (by the app backend), `invalidated` (APNs declared the token
-- dead: `status`, `reason`, and `invalid_since`, the time APNs gave or the time of its answer).
CREATE TABLE push_to_start_token_changes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id liveline_id NOT NULL REFERENCES apps (app_id),
    device_id liveline_id NOT NULL,
    activity_type text NOT NULL CHECK (char_length(activity_type) BETWEEN 1 AND 128),
    change text NOT NULL CHECK (change IN ('registered', 'removed', 'invalidated')),
    token text CHECK (token ~ '^[!-~]+$' AND length(token) <= 512),
    status integer,
    reason text,
    invalid_since timestamptz,
    changed_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((change = 'removed') = (token IS NULL)),
    CHECK ((change = 'invalidated') = (invalid_since IS NOT NULL AND reason IS NOT NULL))
);
CREATE INDEX push_to_start_token_changes_device
    ON push_to_start_token_changes (app_id, device_id, activity_type, id);
CREATE TRIGGER push_to_start_token_changes_append_only BEFORE UPDATE OR DELETE ON push_to_start_token_changes
    FOR EACH ROW EXECUTE FUNCTION liveline_refuse_history_change();

-- The token a remote start goes to now, per (app, device, activity type): the latest
-- registration, unless it was removed after, or APNs declared that same token dead after it was
-- registered (an invalidation of an older token does not touch a newer one).
CREATE VIEW push_to_start_tokens AS
SELECT registration.app_id, registration.device_id, registration.activity_type, registration.token,
    registration.changed_at AS registered_at
FROM (
    SELECT DISTINCT ON (app_id, device_id, activity_type) *
    FROM push_to_start_token_changes
    WHERE change = 'registered'
    ORDER BY app_id, device_id, activity_type, id DESC
) AS registration
WHERE NOT EXISTS (
    SELECT FROM push_to_start_token_changes later
    WHERE later.app_id = registration.app_id AND later.device_id = registration.device_id
        AND later.activity_type = registration.activity_type AND later.id > registration.id
        AND (later.change = 'removed'
            OR (later.change = 'invalidated' AND later.token = registration.token
                AND later.invalid_since >= registration.changed_at))
);

GRANT SELECT, INSERT ON push_to_start_token_changes TO liveline_service;
GRANT SELECT ON push_to_start_tokens TO liveline_service;
GRANT SELECT ON push_to_start_token_changes, push_to_start_tokens TO liveline_dashboard;

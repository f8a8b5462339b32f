-- Widget and control push tokens (#57). A device's widget extension has one token for every
-- push-enabled widget of the app (WidgetKit, iOS 26), reported with the widgets the system listed;
-- each push-enabled control has a token of its own (iOS 18). A push to either reloads them.
--
-- As for push-to-start tokens, each change is a row of its own and none is ever changed or
-- removed, so which token a device had when, and why it stopped, stays readable: `registered`
-- (a new token, a rotation, or the same token with other widgets; `widgets` lists them),
-- `removed` (by the app backend, or a report of no widgets), `invalidated` (APNs declared the token
-- dead). `control_kind` is empty for the widget token, whose slot is the device itself.
CREATE TABLE reload_token_changes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id liveline_id NOT NULL REFERENCES apps (app_id),
    device_id liveline_id NOT NULL,
    push_type text NOT NULL CHECK (push_type IN ('widgets', 'controls')),
    control_kind text NOT NULL CHECK (char_length(control_kind) <= 128),
    change text NOT NULL CHECK (change IN ('registered', 'removed', 'invalidated')),
    token text CHECK (token ~ '^[!-~]+$' AND length(token) <= 512),
    widgets jsonb CHECK (jsonb_typeof(widgets) = 'array'),
    status integer,
    reason text,
    invalid_since timestamptz,
    changed_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((push_type = 'widgets') = (control_kind = '')),
    CHECK ((change = 'removed') = (token IS NULL)),
    CHECK ((change = 'invalidated') = (invalid_since IS NOT NULL AND reason IS NOT NULL)),
    CHECK ((widgets IS NOT NULL) = (push_type = 'widgets' AND change = 'registered'))
);
CREATE INDEX reload_token_changes_slot ON reload_token_changes (app_id, device_id, push_type, control_kind, id);
CREATE TRIGGER reload_token_changes_append_only BEFORE UPDATE OR DELETE ON reload_token_changes
    FOR EACH ROW EXECUTE FUNCTION liveline_refuse_history_change();

-- The tokens a reload goes to now, one row per slot, kept with each change in the same
-- transaction: the projection of the changes, as `activities` is of the log. A reload to every
-- device of an app walks it in key order, one delivery shard at a time (`shard`, the device's, as
-- the server computes it), so its cursor is the last device reached. `widget_kinds` are the
-- kinds of the widgets listed with a widget token (empty for a control's).
CREATE TABLE reload_tokens (
    app_id liveline_id NOT NULL,
    push_type text NOT NULL CHECK (push_type IN ('widgets', 'controls')),
    control_kind text NOT NULL,
    shard smallint NOT NULL CHECK (shard >= 0),
    device_id liveline_id NOT NULL,
    token text NOT NULL,
    widget_kinds text[] NOT NULL,
    registered_at timestamptz NOT NULL,
    change_id bigint NOT NULL,
    PRIMARY KEY (app_id, push_type, control_kind, shard, device_id)
);

GRANT SELECT, INSERT ON reload_token_changes TO liveline_service;
GRANT SELECT, INSERT, UPDATE, DELETE ON reload_tokens TO liveline_service;
GRANT SELECT ON reload_token_changes, reload_tokens TO liveline_dashboard;

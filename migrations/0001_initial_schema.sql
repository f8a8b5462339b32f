-- Liveline's initial schema: tenants and keys, the append-only event log, the current-state
-- projection with its deadlines, cap accounting, idempotency records and rejections.
-- The columns of `events` are a public interface (dashboards read them): change them only by
-- adding, never by renaming or removing.

-- Roles. Cluster-wide, so created only when missing; operators grant them to login roles.
-- liveline_service: what the server needs (no UPDATE/DELETE on events).
-- liveline_dashboard: read-only access for dashboards.
DO $$
BEGIN
    CREATE ROLE liveline_service NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;
DO $$
BEGIN
    CREATE ROLE liveline_dashboard NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;

-- Identifiers callers choose: 1–128 characters of A-Z a-z 0-9 . _ : -
CREATE DOMAIN liveline_id AS text CHECK (VALUE ~ '^[A-Za-z0-9._:-]{1,128}$');

CREATE TYPE activity_state AS ENUM ('pending', 'active', 'stale', 'ended', 'dismissed');
CREATE TYPE event_cause AS ENUM ('app', 'device', 'system');
CREATE TYPE deadline_kind AS ENUM ('start', 'stale', 'lifetime', 'dismissal');

-- Tenants: one iOS app each, with its own caps and update budget.
CREATE TABLE apps (
    app_id liveline_id PRIMARY KEY,
    bundle_id text NOT NULL CHECK (length(bundle_id) BETWEEN 1 AND 255),
    max_open integer NOT NULL DEFAULT 5 CHECK (max_open >= 0),
    max_open_per_device integer CHECK (max_open_per_device > 0),
    priority_budget_per_hour integer NOT NULL DEFAULT 10 CHECK (priority_budget_per_hour >= 0),
    frequent_updates boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- API keys, stored as SHA-256 of the secret; the secret itself is shown once and never stored.
CREATE TABLE api_keys (
    key_id uuid PRIMARY KEY,
    app_id liveline_id NOT NULL REFERENCES apps,
    secret_sha256 bytea NOT NULL UNIQUE CHECK (length(secret_sha256) = 32),
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX api_keys_app ON api_keys (app_id);

-- The event log. Append-only: the triggers below refuse UPDATE, DELETE and TRUNCATE for every
-- role, and no role is granted those privileges.
-- `transaction_id` lets readers page by position without missing events that commit out of
-- order (see docs/event-log.md).
CREATE TABLE events (
    position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
    app_id liveline_id NOT NULL REFERENCES apps,
    activity_id liveline_id NOT NULL,
    version integer NOT NULL CHECK (version > 0),
    type text NOT NULL CHECK (type ~ '^activity\.[a-z_]+$'),
    data jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(data) = 'object'),
    caused_by event_cause NOT NULL,
    occurred_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (app_id, activity_id, version)
);
CREATE INDEX events_app_position ON events (app_id, position);
CREATE INDEX events_transaction ON events (transaction_id, position);
CREATE INDEX events_type_occurred ON events (type, occurred_at);

CREATE FUNCTION liveline_refuse_event_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event log is append-only: % on events is not allowed', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER events_no_update_or_delete BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION liveline_refuse_event_change();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION liveline_refuse_event_change();

-- The current state of each activity: a projection of its stream, written in the same
-- transaction as the events it folds. `next_deadline_*` is the next time-driven transition.
CREATE TABLE activities (
    app_id liveline_id NOT NULL REFERENCES apps,
    activity_id liveline_id NOT NULL,
    state activity_state NOT NULL,
    version integer NOT NULL CHECK (version > 0),
    activity_type text,
    attributes jsonb NOT NULL DEFAULT '{}'::jsonb,
    content_state jsonb NOT NULL DEFAULT '{}'::jsonb,
    stale_date timestamptz,
    relevance_score double precision CHECK (relevance_score >= 0),
    push_type text,
    push_token text,
    device_id text,
    start_date timestamptz,
    last_timestamp timestamptz,
    requested_at timestamptz NOT NULL,
    activated_at timestamptz,
    ended_at timestamptz,
    dismissed_at timestamptz,
    dismissal_date timestamptz,
    next_deadline_at timestamptz,
    next_deadline_kind deadline_kind,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (app_id, activity_id),
    CHECK ((next_deadline_at IS NULL) = (next_deadline_kind IS NULL))
);
CREATE INDEX activities_next_deadline ON activities (next_deadline_at) WHERE next_deadline_at IS NOT NULL;
CREATE INDEX activities_app_state ON activities (app_id, state, requested_at DESC, activity_id);
CREATE INDEX activities_open_by_device ON activities (app_id, device_id)
    WHERE device_id IS NOT NULL AND state IN ('pending', 'active', 'stale');

-- Cap accounting. Open activities are counted per app, per device and globally; the global
-- count is split into stripes so that opening activities of different apps does not queue
-- behind a single counter row. Each stripe holds a share of the global cap.
CREATE TABLE service_limits (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    global_max_open integer NOT NULL DEFAULT 100000 CHECK (global_max_open >= 0)
);
INSERT INTO service_limits DEFAULT VALUES;

CREATE TABLE global_open_stripes (
    stripe smallint PRIMARY KEY,
    capacity integer NOT NULL CHECK (capacity >= 0),
    open integer NOT NULL DEFAULT 0 CHECK (open >= 0)
);
INSERT INTO global_open_stripes (stripe, capacity)
SELECT s, 100000 / 16 + CASE WHEN s < 100000 % 16 THEN 1 ELSE 0 END
FROM generate_series(0, 15) AS s;

CREATE TABLE app_open_counts (
    app_id liveline_id PRIMARY KEY REFERENCES apps,
    open integer NOT NULL DEFAULT 0 CHECK (open >= 0)
);

CREATE TABLE device_open_counts (
    app_id liveline_id NOT NULL REFERENCES apps,
    device_id text NOT NULL,
    open integer NOT NULL DEFAULT 0 CHECK (open >= 0),
    PRIMARY KEY (app_id, device_id)
);

-- Idempotency: the first outcome of a command per (app, key), replayed to retries.
CREATE TABLE idempotency_keys (
    app_id liveline_id NOT NULL REFERENCES apps,
    idempotency_key text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    request_sha256 bytea NOT NULL,
    response_status integer NOT NULL,
    response_body jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (app_id, idempotency_key)
);

-- Refused commands, recorded apart from the event log so they never slow accepted ones.
CREATE TABLE rejections (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id liveline_id NOT NULL REFERENCES apps,
    activity_id text,
    command text NOT NULL,
    code text NOT NULL,
    details jsonb NOT NULL DEFAULT '{}'::jsonb,
    occurred_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX rejections_app_code_time ON rejections (app_id, code, occurred_at);
CREATE INDEX rejections_time ON rejections (occurred_at);

-- Privileges.
REVOKE UPDATE, DELETE, TRUNCATE ON events FROM PUBLIC;
GRANT SELECT, INSERT ON events TO liveline_service;
GRANT SELECT, INSERT, UPDATE, DELETE ON
    apps, api_keys, activities, service_limits, global_open_stripes, app_open_counts,
    device_open_counts, idempotency_keys, rejections
    TO liveline_service;
GRANT SELECT ON liveline_migrations TO liveline_service;
GRANT SELECT ON events, activities, rejections, app_open_counts, device_open_counts,
    global_open_stripes, service_limits TO liveline_dashboard;
GRANT SELECT (app_id, bundle_id, max_open, max_open_per_device, priority_budget_per_hour,
    frequent_updates, created_at) ON apps TO liveline_dashboard;

-- Delivery to devices through APNs (SPEC §7): what became of every push, the tokens APNs
-- declared dead, the apps whose credentials APNs refused, and the delivery workers' shares of
-- the log. None of it touches `events` or an activity's version.

CREATE FUNCTION liveline_refuse_history_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % is not allowed', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'insufficient_privilege';
END
$$;

-- Every attempt to send a push, and every decision not to send one (superseded by newer
-- content, no token yet, no credentials, …). `attempt` is 0 for a decision without a request.
-- `position` is the event's in `events` (not a foreign key: the log refuses TRUNCATE by its own
-- trigger, and a key would refuse it first with another error).
CREATE TABLE deliveries (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    position bigint NOT NULL,
    app_id liveline_id NOT NULL,
    activity_id liveline_id NOT NULL,
    version integer NOT NULL CHECK (version > 0),
    outcome text NOT NULL CHECK (outcome IN (
        'delivered', 'retrying', 'failed', 'token_invalidated', 'app_suspended', 'superseded',
        'awaiting_token', 'no_credentials', 'undeliverable', 'expired'
    )),
    attempt integer NOT NULL CHECK (attempt >= 0),
    apns_id uuid,
    device_token text,
    priority smallint CHECK (priority IN (5, 10)),
    status integer,
    reason text,
    -- From the request's start to APNs' answer (or to the deadline).
    latency_us bigint CHECK (latency_us >= 0),
    attempted_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deliveries_activity ON deliveries (app_id, activity_id, id);
CREATE INDEX deliveries_position ON deliveries (position);
CREATE INDEX deliveries_attempted ON deliveries (attempted_at);
CREATE TRIGGER deliveries_append_only BEFORE UPDATE OR DELETE ON deliveries
    FOR EACH ROW EXECUTE FUNCTION liveline_refuse_history_change();

-- Tokens APNs declared dead (410, BadDeviceToken, DeviceTokenNotForTopic). Nothing more goes to
-- such a token, unless the activity registers it again after `invalid_since`.
CREATE TABLE push_token_invalidations (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id liveline_id NOT NULL,
    activity_id liveline_id NOT NULL,
    device_token text NOT NULL,
    position bigint NOT NULL,
    status integer NOT NULL,
    reason text NOT NULL,
    invalid_since timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX push_token_invalidations_activity ON push_token_invalidations (app_id, activity_id);
CREATE TRIGGER push_token_invalidations_append_only BEFORE UPDATE OR DELETE ON push_token_invalidations
    FOR EACH ROW EXECUTE FUNCTION liveline_refuse_history_change();

-- Apps whose credentials APNs refused (403 InvalidProviderToken, BadTopic, …). The app's pushes
-- are not sent while its credentials are the ones refused (`credentials_updated_at`); setting
-- new credentials resumes them.
CREATE TABLE delivery_suspensions (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id liveline_id NOT NULL REFERENCES apps (app_id),
    status integer NOT NULL,
    reason text NOT NULL,
    credentials_updated_at timestamptz NOT NULL,
    suspended_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX delivery_suspensions_app ON delivery_suspensions (app_id, id);
CREATE TRIGGER delivery_suspensions_append_only BEFORE UPDATE OR DELETE ON delivery_suspensions
    FOR EACH ROW EXECUTE FUNCTION liveline_refuse_history_change();

-- The log is split into shards by activity; a worker holds a shard under a lease it renews, and
-- a shard's `position` says that every event of it up to there is settled. Delivery starts at
-- the end of the log as it is now: events recorded before delivery existed are not sent.
CREATE TABLE delivery_shards (
    shard integer PRIMARY KEY CHECK (shard >= 0),
    position bigint NOT NULL,
    owner text,
    lease_expires_at timestamptz
);
INSERT INTO delivery_shards (shard, position)
    SELECT shard, (SELECT coalesce(max(position), 0) FROM events) FROM generate_series(0, 15) AS shard;

-- The delivery workers alive, so that each takes a fair share of the shards.
CREATE TABLE delivery_workers (
    worker_id text PRIMARY KEY,
    heartbeat_at timestamptz NOT NULL
);

-- Dashboards.
CREATE VIEW deliveries_per_minute AS
    SELECT date_trunc('minute', attempted_at) AS minute, app_id, outcome, count(*) AS deliveries
    FROM deliveries GROUP BY 1, 2, 3;
CREATE VIEW delivery_failures_by_reason AS
    SELECT date_trunc('minute', attempted_at) AS minute, app_id, status, reason, count(*) AS failures
    FROM deliveries WHERE attempt > 0 AND outcome <> 'delivered' GROUP BY 1, 2, 3, 4;
-- From the commit of the event to APNs' answer, for pushes APNs took.
CREATE VIEW delivery_latency_per_minute AS
    SELECT date_trunc('minute', d.attempted_at) AS minute, d.app_id, count(*) AS delivered,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM d.attempted_at - e.recorded_at)
               + d.latency_us / 1e6) AS commit_to_answer_p50_seconds,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM d.attempted_at - e.recorded_at)
               + d.latency_us / 1e6) AS commit_to_answer_p99_seconds
    FROM deliveries d JOIN events e ON e.position = d.position
    WHERE d.outcome = 'delivered' GROUP BY 1, 2;
CREATE VIEW invalidated_tokens_per_minute AS
    SELECT date_trunc('minute', recorded_at) AS minute, app_id, reason, count(*) AS tokens
    FROM push_token_invalidations GROUP BY 1, 2, 3;

GRANT SELECT, INSERT ON deliveries, push_token_invalidations, delivery_suspensions TO liveline_service;
GRANT SELECT, UPDATE ON delivery_shards TO liveline_service;
GRANT SELECT, INSERT, UPDATE, DELETE ON delivery_workers TO liveline_service;
GRANT SELECT ON deliveries, push_token_invalidations, delivery_suspensions, delivery_shards, deliveries_per_minute,
    delivery_failures_by_reason, delivery_latency_per_minute, invalidated_tokens_per_minute TO liveline_dashboard;

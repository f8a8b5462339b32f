-- Widget and control reloads (#57): one request reloads the app's widgets (or one control kind) on
-- named devices or on every device that has them; the delivery worker fans it out from a cursor
-- per delivery shard, and paces the widget reloads of each device.

-- How often a device may be sent a reload: widgets at most once per interval (WidgetKit budgets
-- each widget's reloads, typically 40–70 a day, and withholds the rest while APNs still answers
-- 200); requests inside the interval are coalesced into one reload sent when it ends. Controls
-- have no documented budget. 0 turns pacing off.
ALTER TABLE apps
    ADD COLUMN widget_reload_interval_seconds integer NOT NULL DEFAULT 1800
        CHECK (widget_reload_interval_seconds BETWEEN 0 AND 86400),
    ADD COLUMN control_reload_interval_seconds integer NOT NULL DEFAULT 0
        CHECK (control_reload_interval_seconds BETWEEN 0 AND 86400);

-- The requests, as they were accepted: what they reload (`push_type`, `control_kind`, the widget
-- kinds; NULL kinds for every widget), on which devices (NULL: every device of the app that has
-- it), asked by whom (an activity's event, named by version, or the API, with its idempotency
-- key), and how many devices they targeted when accepted.
CREATE TABLE reload_requests (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    app_id liveline_id NOT NULL REFERENCES apps (app_id),
    push_type text NOT NULL CHECK (push_type IN ('widgets', 'controls')),
    control_kind text NOT NULL CHECK (char_length(control_kind) <= 128),
    widget_kinds text[] CHECK (cardinality(widget_kinds) BETWEEN 1 AND 100),
    device_ids text[] CHECK (cardinality(device_ids) BETWEEN 1 AND 1000),
    activity_id liveline_id,
    version integer,
    idempotency_key text CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    request_sha256 bytea,
    targets integer NOT NULL CHECK (targets >= 0),
    requested_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((push_type = 'widgets') = (control_kind = '')),
    CHECK (widget_kinds IS NULL OR push_type = 'widgets'),
    CHECK ((activity_id IS NULL) = (version IS NULL)),
    CHECK (activity_id IS NULL OR device_ids IS NOT NULL),
    CHECK ((idempotency_key IS NULL) = (request_sha256 IS NULL))
);
CREATE UNIQUE INDEX reload_requests_by_event ON reload_requests (app_id, activity_id, version)
    WHERE activity_id IS NOT NULL;
CREATE INDEX reload_requests_by_idempotency_key ON reload_requests (app_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX reload_requests_by_activity ON reload_requests (app_id, activity_id)
    WHERE activity_id IS NOT NULL;

-- A request's fan-out still to do: a row per delivery shard, with the last device reached in it
-- (devices are walked in `reload_tokens`' key order). The shard's worker deletes the row when it
-- has reached the last device.
CREATE TABLE reload_fanouts (
    shard smallint NOT NULL CHECK (shard >= 0),
    reload_id bigint NOT NULL REFERENCES reload_requests (id),
    after_device text NOT NULL DEFAULT '',
    PRIMARY KEY (shard, reload_id)
);

-- Each slot's pacing, kept with its token: when a reload last went (`last_sent_at`), the reload
-- coalesced or retried and when it is due (`due_reload`, `due_at`, `due_attempt`), and the
-- reload on its way to APNs (`sending_reload`, `sending_attempt`), which a worker that takes the
-- shard over sends again.
ALTER TABLE reload_tokens
    ADD COLUMN last_sent_at timestamptz,
    ADD COLUMN due_reload bigint,
    ADD COLUMN due_at timestamptz,
    ADD COLUMN due_attempt integer NOT NULL DEFAULT 0 CHECK (due_attempt >= 0),
    ADD COLUMN sending_reload bigint,
    ADD COLUMN sending_attempt integer NOT NULL DEFAULT 0 CHECK (sending_attempt >= 0),
    ADD CHECK ((due_reload IS NULL) = (due_at IS NULL));
CREATE INDEX reload_tokens_due ON reload_tokens (shard, due_at) WHERE due_at IS NOT NULL;
-- A reload sent and answered updates its slot twice, neither time an indexed column (nothing
-- indexes the reload on its way: a worker that takes a shard over reads the shard's rows for it):
-- with room left on each page, the updates stay on their page (heap-only).
ALTER TABLE reload_tokens SET (fillfactor = 80);

-- The shards of reload work, held under leases as `delivery_shards` are, and the heartbeats of the
-- reload workers that share them.
CREATE TABLE reload_shards (
    shard integer PRIMARY KEY CHECK (shard >= 0),
    owner text,
    lease_expires_at timestamptz
);
INSERT INTO reload_shards (shard) SELECT generate_series(0, 15);
CREATE TABLE reload_workers (
    worker_id text PRIMARY KEY,
    heartbeat_at timestamptz NOT NULL
);

-- A reload's outcomes, a row per decision or attempt, as `deliveries` has for Live Activity
-- pushes: which request, device and kind, the token it went to, APNs' answer. `coalesced`: the
-- device had a reload within its interval, and this request rides on the one sent when the
-- interval ends. Append-only, and split by time like `deliveries`, retired and archived with it:
-- its rows from before the next partition go to the first one, made here (empty).
CREATE SEQUENCE reload_deliveries_id_seq;
CREATE TABLE reload_deliveries (
    id bigint NOT NULL DEFAULT nextval('reload_deliveries_id_seq'),
    reload_id bigint NOT NULL,
    app_id liveline_id NOT NULL,
    device_id liveline_id NOT NULL,
    push_type text NOT NULL CHECK (push_type IN ('widgets', 'controls')),
    control_kind text NOT NULL,
    outcome text NOT NULL CHECK (outcome IN (
        'delivered', 'retrying', 'failed', 'token_invalidated', 'app_suspended', 'no_credentials', 'coalesced')),
    attempt integer NOT NULL CHECK (attempt >= 0),
    apns_id uuid,
    device_token text,
    priority smallint CHECK (priority IN (5, 10)),
    status integer,
    reason text,
    latency_us bigint CHECK (latency_us >= 0),
    attempted_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (id, recorded_at)
) PARTITION BY RANGE (recorded_at);
ALTER SEQUENCE reload_deliveries_id_seq OWNED BY reload_deliveries.id;
CREATE INDEX reload_deliveries_by_reload ON reload_deliveries (reload_id, device_id, id);
CREATE INDEX reload_deliveries_by_device ON reload_deliveries (app_id, device_id, id);
CREATE TRIGGER reload_deliveries_append_only BEFORE UPDATE OR DELETE ON reload_deliveries
    FOR EACH ROW EXECUTE FUNCTION liveline_refuse_history_change();

ALTER TABLE log_partitions DROP CONSTRAINT log_partitions_parent_check;
ALTER TABLE log_partitions ADD CONSTRAINT log_partitions_parent_check
    CHECK (parent IN ('events', 'deliveries', 'push_token_invalidations', 'rejections', 'reload_deliveries'));
DO $$
DECLARE
    v_bound timestamptz;
BEGIN
    SELECT date_bin(partition_interval, now(), '2000-01-01 00:00:00+00') INTO v_bound FROM log_partitioning;
    EXECUTE format('CREATE TABLE reload_deliveries_before_partitions PARTITION OF reload_deliveries '
        'FOR VALUES FROM (MINVALUE) TO (%L)', v_bound);
    INSERT INTO log_partitions (table_name, parent, from_time, to_time, settled_at)
        VALUES ('reload_deliveries_before_partitions', 'reload_deliveries', '-infinity', v_bound, v_bound);
END
$$;

-- A device's pushes are its activities' and its reloads: its activities are found by device.
CREATE INDEX activities_by_device ON activities (app_id, device_id) WHERE device_id IS NOT NULL;

CREATE VIEW reload_deliveries_per_minute AS
SELECT date_trunc('minute', attempted_at) AS minute, app_id, push_type, outcome, count(*) AS deliveries
FROM reload_deliveries GROUP BY 1, 2, 3, 4;

-- A request's progress: its devices counted by where each stands (its latest outcome).
CREATE VIEW reload_progress AS
SELECT r.id AS reload_id, r.app_id, r.push_type, r.control_kind, r.targets, r.requested_at, d.outcome,
    count(d.device_id) AS devices
FROM reload_requests r
LEFT JOIN LATERAL (
    SELECT DISTINCT ON (device_id) device_id, outcome FROM reload_deliveries
    WHERE reload_id = r.id ORDER BY device_id, id DESC
) AS d ON true
GROUP BY 1, 2, 3, 4, 5, 6, 7;

GRANT SELECT, INSERT ON reload_requests TO liveline_service;
-- Its idempotency keys are forgotten after the window, as the commands' are.
GRANT UPDATE (idempotency_key, request_sha256) ON reload_requests TO liveline_service;
GRANT SELECT, INSERT, UPDATE, DELETE ON reload_fanouts TO liveline_service;
GRANT SELECT, UPDATE ON reload_shards TO liveline_service;
GRANT SELECT, INSERT, UPDATE, DELETE ON reload_workers TO liveline_service;
GRANT SELECT, INSERT ON reload_deliveries TO liveline_service;
GRANT USAGE ON SEQUENCE reload_deliveries_id_seq TO liveline_service;
GRANT SELECT ON reload_requests, reload_fanouts, reload_shards, reload_deliveries, reload_deliveries_per_minute,
    reload_progress TO liveline_dashboard;

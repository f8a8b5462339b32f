-- The baseline: the schema of migrations 0001 to 0039, for a new database to be made in one
-- step. Written by scripts/update-baseline.sh from a database migrated through them; not
-- edited by hand (a change to the schema is a new numbered migration, then the script again).
-- This file runs first, then the function definitions (migrations/functions/), then
-- 0039_triggers.sql, in one transaction.

DO $$ BEGIN
    CREATE ROLE liveline_service NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $$;

DO $$ BEGIN
    CREATE ROLE liveline_dashboard NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END $$;

CREATE TYPE public.event_cause AS ENUM (
    'app',
    'device',
    'system'
);

CREATE DOMAIN public.liveline_id AS text
	CONSTRAINT liveline_id_check CHECK (((VALUE ~ '^[A-Za-z0-9._:-]+$'::text) AND (length(VALUE) <= 128)));

CREATE TABLE public.apps (
    app_id public.liveline_id NOT NULL,
    bundle_id text NOT NULL,
    max_open integer DEFAULT 5 NOT NULL,
    max_open_per_device integer,
    priority_budget_per_hour integer DEFAULT 10 NOT NULL,
    frequent_updates boolean DEFAULT false NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    open_excess integer DEFAULT 0 NOT NULL,
    push_to_start_budget_per_hour integer DEFAULT 10 NOT NULL,
    widget_reload_interval_seconds integer DEFAULT 1800 NOT NULL,
    control_reload_interval_seconds integer DEFAULT 0 NOT NULL,
    CONSTRAINT apps_bundle_id_check CHECK (((length(bundle_id) >= 1) AND (length(bundle_id) <= 255))),
    CONSTRAINT apps_control_reload_interval_seconds_check CHECK (((control_reload_interval_seconds >= 0) AND (control_reload_interval_seconds <= 86400))),
    CONSTRAINT apps_max_open_check CHECK ((max_open >= 0)),
    CONSTRAINT apps_max_open_per_device_check CHECK ((max_open_per_device > 0)),
    CONSTRAINT apps_open_excess_check CHECK ((open_excess >= 0)),
    CONSTRAINT apps_priority_budget_per_hour_check CHECK ((priority_budget_per_hour >= 0)),
    CONSTRAINT apps_push_to_start_budget_per_hour_check CHECK ((push_to_start_budget_per_hour >= 1)),
    CONSTRAINT apps_widget_reload_interval_seconds_check CHECK (((widget_reload_interval_seconds >= 0) AND (widget_reload_interval_seconds <= 86400)))
);

CREATE TABLE public.events (
    "position" bigint NOT NULL,
    transaction_id xid8 DEFAULT pg_current_xact_id() NOT NULL,
    app_id public.liveline_id NOT NULL,
    activity_id public.liveline_id NOT NULL,
    version integer NOT NULL,
    type text NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    caused_by public.event_cause NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    stream_recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT events_data_check CHECK ((jsonb_typeof(data) = 'object'::text)),
    CONSTRAINT events_position_in_transaction CHECK ((("position" >> 16) = ((transaction_id)::text)::bigint)),
    CONSTRAINT events_type_check CHECK ((type ~ '^activity\.[a-z_]+$'::text)),
    CONSTRAINT events_version_check CHECK ((version > 0))
)
PARTITION BY RANGE (stream_recorded_at);

CREATE TABLE public.activities (
    app_id public.liveline_id NOT NULL,
    activity_id public.liveline_id NOT NULL,
    state text NOT NULL,
    version integer NOT NULL,
    activity_type text,
    attributes jsonb DEFAULT '{}'::jsonb NOT NULL,
    content_state jsonb DEFAULT '{}'::jsonb NOT NULL,
    stale_date timestamp with time zone,
    relevance_score double precision,
    push_type text,
    push_token text,
    device_id text,
    start_date timestamp with time zone,
    last_timestamp timestamp with time zone,
    requested_at timestamp with time zone NOT NULL,
    activated_at timestamp with time zone,
    ended_at timestamp with time zone,
    dismissed_at timestamp with time zone,
    dismissal_date timestamp with time zone,
    next_deadline_at timestamp with time zone,
    next_deadline_kind text,
    last_event_at timestamp with time zone NOT NULL,
    style text,
    end_reason text,
    priority_updates timestamp with time zone[] DEFAULT '{}'::timestamp with time zone[] NOT NULL,
    app_stripe smallint,
    global_stripe smallint,
    stream_recorded_at timestamp with time zone NOT NULL,
    CONSTRAINT activities_app_stripe_check CHECK (((app_stripe >= 0) AND (app_stripe <= 7))),
    CONSTRAINT activities_check CHECK (((next_deadline_at IS NULL) = (next_deadline_kind IS NULL))),
    CONSTRAINT activities_end_reason_check CHECK ((end_reason = ANY (ARRAY['app'::text, 'lifetime_exceeded'::text]))),
    CONSTRAINT activities_global_stripe_check CHECK (((global_stripe >= 0) AND (global_stripe <= 15))),
    CONSTRAINT activities_next_deadline_kind CHECK ((next_deadline_kind = ANY (ARRAY['start'::text, 'stale'::text, 'lifetime'::text, 'dismissal'::text]))),
    CONSTRAINT activities_open_holds_stripes CHECK (((state = ANY (ARRAY['pending'::text, 'active'::text, 'stale'::text])) = ((app_stripe IS NOT NULL) AND (global_stripe IS NOT NULL)))),
    CONSTRAINT activities_relevance_score_check CHECK ((relevance_score >= (0)::double precision)),
    CONSTRAINT activities_state CHECK ((state = ANY (ARRAY['pending'::text, 'active'::text, 'stale'::text, 'ended'::text, 'dismissed'::text]))),
    CONSTRAINT activities_style_check CHECK ((style = ANY (ARRAY['standard'::text, 'transient'::text]))),
    CONSTRAINT activities_version_check CHECK ((version > 0))
);

CREATE UNLOGGED TABLE public.activities_replay (
    app_id text NOT NULL,
    activity_id text NOT NULL,
    state text NOT NULL,
    version integer NOT NULL,
    activity_type text,
    attributes jsonb DEFAULT '{}'::jsonb NOT NULL,
    content_state jsonb DEFAULT '{}'::jsonb NOT NULL,
    stale_date timestamp with time zone,
    relevance_score double precision,
    push_type text,
    push_token text,
    device_id text,
    start_date timestamp with time zone,
    last_timestamp timestamp with time zone,
    requested_at timestamp with time zone NOT NULL,
    activated_at timestamp with time zone,
    ended_at timestamp with time zone,
    dismissed_at timestamp with time zone,
    dismissal_date timestamp with time zone,
    next_deadline_at timestamp with time zone,
    next_deadline_kind text,
    last_event_at timestamp with time zone NOT NULL,
    style text,
    end_reason text,
    priority_updates timestamp with time zone[] DEFAULT '{}'::timestamp with time zone[] NOT NULL,
    app_stripe smallint,
    global_stripe smallint,
    stream_recorded_at timestamp with time zone
);

CREATE UNLOGGED TABLE public.activities_replay_changes (
    app_id text NOT NULL,
    activity_id text NOT NULL
);

CREATE UNLOGGED TABLE public.activities_replay_staged (
    app_id text NOT NULL,
    activity_id text NOT NULL,
    state text NOT NULL,
    version integer NOT NULL,
    activity_type text,
    attributes jsonb NOT NULL,
    content_state jsonb NOT NULL,
    stale_date timestamp with time zone,
    relevance_score double precision,
    push_type text,
    push_token text,
    device_id text,
    start_date timestamp with time zone,
    last_timestamp timestamp with time zone,
    requested_at timestamp with time zone NOT NULL,
    activated_at timestamp with time zone,
    ended_at timestamp with time zone,
    dismissed_at timestamp with time zone,
    dismissal_date timestamp with time zone,
    next_deadline_at timestamp with time zone,
    next_deadline_kind text,
    last_event_at timestamp with time zone NOT NULL,
    style text,
    end_reason text,
    priority_updates timestamp with time zone[] NOT NULL,
    app_stripe smallint,
    global_stripe smallint,
    stream_recorded_at timestamp with time zone
);

CREATE TABLE public.admin_changes (
    id bigint NOT NULL,
    occurred_at timestamp with time zone DEFAULT now() NOT NULL,
    actor text NOT NULL,
    action text NOT NULL,
    app_id text,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    transaction_id xid8 DEFAULT pg_current_xact_id(),
    CONSTRAINT admin_changes_action_check CHECK ((action = ANY (ARRAY['app.created'::text, 'app.updated'::text, 'key.issued'::text, 'key.revoked'::text, 'limits.updated'::text, 'apns.set'::text, 'apns.removed'::text, 'channel.created'::text, 'channel.deleted'::text, 'content.revealed'::text]))),
    CONSTRAINT admin_changes_details_check CHECK ((jsonb_typeof(details) = 'object'::text))
);

ALTER TABLE public.admin_changes ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.admin_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE VIEW public.alerts_per_minute AS
 SELECT date_trunc('minute'::text, events.occurred_at) AS minute,
    events.app_id,
    count(*) AS alerts
   FROM public.events
  WHERE ((events.type = 'activity.updated'::text) AND (events.data ? 'alert'::text))
  GROUP BY (date_trunc('minute'::text, events.occurred_at)), events.app_id;

CREATE TABLE public.api_keys (
    key_id uuid NOT NULL,
    app_id public.liveline_id NOT NULL,
    secret_sha256 bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    revoked_at timestamp with time zone,
    CONSTRAINT api_keys_secret_sha256_check CHECK ((length(secret_sha256) = 32))
);

CREATE TABLE public.apns_credentials (
    app_id public.liveline_id NOT NULL,
    team_id text NOT NULL,
    key_id text NOT NULL,
    environment text NOT NULL,
    sealed_private_key bytea NOT NULL,
    public_key_sha256 bytea NOT NULL,
    updated_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT apns_credentials_environment_check CHECK ((environment = ANY (ARRAY['sandbox'::text, 'production'::text]))),
    CONSTRAINT apns_credentials_key_id_check CHECK ((key_id ~ '^[A-Z0-9]{10}$'::text)),
    CONSTRAINT apns_credentials_public_key_sha256_check CHECK ((length(public_key_sha256) = 32)),
    CONSTRAINT apns_credentials_team_id_check CHECK ((team_id ~ '^[A-Z0-9]{10}$'::text))
);

CREATE TABLE public.app_open_stripes (
    app_id public.liveline_id NOT NULL,
    stripe smallint NOT NULL,
    capacity integer NOT NULL,
    open integer DEFAULT 0 NOT NULL,
    CONSTRAINT app_open_stripes_capacity_check CHECK ((capacity >= 0)),
    CONSTRAINT app_open_stripes_open_check CHECK ((open >= 0)),
    CONSTRAINT app_open_stripes_stripe_check CHECK (((stripe >= 0) AND (stripe <= 7)))
);

CREATE VIEW public.app_open_counts AS
 SELECT app_open_stripes.app_id,
    (sum(app_open_stripes.open))::integer AS open
   FROM public.app_open_stripes
  GROUP BY app_open_stripes.app_id;

CREATE TABLE public.archive_key_nodes (
    start bigint NOT NULL,
    level smallint NOT NULL,
    key bytea NOT NULL,
    CONSTRAINT archive_key_nodes_check CHECK (((start % ('281474976710656'::bigint >> (level)::integer)) = 0)),
    CONSTRAINT archive_key_nodes_key_check CHECK ((octet_length(key) = 32)),
    CONSTRAINT archive_key_nodes_level_check CHECK (((level >= 0) AND (level <= 48))),
    CONSTRAINT archive_key_nodes_start_check CHECK (((start >= 0) AND (start < '281474976710656'::bigint)))
);

CREATE TABLE public.broadcast_channels (
    app_id public.liveline_id NOT NULL,
    channel_id text NOT NULL,
    environment text NOT NULL,
    message_storage_policy text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    deleted_at timestamp with time zone,
    CONSTRAINT broadcast_channels_channel_id_check CHECK (((channel_id ~ '^[A-Za-z0-9+/=_-]+$'::text) AND (length(channel_id) <= 256))),
    CONSTRAINT broadcast_channels_environment_check CHECK ((environment = ANY (ARRAY['sandbox'::text, 'production'::text]))),
    CONSTRAINT broadcast_channels_message_storage_policy_check CHECK ((message_storage_policy = ANY (ARRAY['none'::text, 'mostRecent'::text])))
);

CREATE TABLE public.global_open_stripes (
    stripe smallint NOT NULL,
    capacity integer NOT NULL,
    open integer DEFAULT 0 NOT NULL,
    CONSTRAINT global_open_stripes_capacity_check CHECK ((capacity >= 0)),
    CONSTRAINT global_open_stripes_open_check CHECK ((open >= 0))
);

CREATE TABLE public.service_limits (
    singleton boolean DEFAULT true NOT NULL,
    global_max_open integer DEFAULT 100000 NOT NULL,
    open_excess integer DEFAULT 0 NOT NULL,
    CONSTRAINT service_limits_global_max_open_check CHECK ((global_max_open >= 0)),
    CONSTRAINT service_limits_open_excess_check CHECK ((open_excess >= 0)),
    CONSTRAINT service_limits_singleton_check CHECK (singleton)
);

CREATE VIEW public.cap_utilisation AS
 SELECT 'app'::text AS scope,
    a.app_id,
    (c.open)::bigint AS open,
    a.max_open AS cap,
    round(((100.0 * (c.open)::numeric) / (NULLIF(a.max_open, 0))::numeric), 1) AS percent
   FROM (public.apps a
     JOIN public.app_open_counts c USING (app_id))
UNION ALL
 SELECT 'global'::text AS scope,
    NULL::text AS app_id,
    sum(s.open) AS open,
    max(l.global_max_open) AS cap,
    round(((100.0 * (sum(s.open))::numeric) / (NULLIF(max(l.global_max_open), 0))::numeric), 1) AS percent
   FROM (public.global_open_stripes s
     CROSS JOIN public.service_limits l);

CREATE TABLE public.console_sessions (
    session_sha256 bytea NOT NULL,
    app_id public.liveline_id,
    key_id uuid,
    admin_key_sha256 bytea,
    csrf_token text NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    expires_at timestamp with time zone NOT NULL,
    CONSTRAINT console_sessions_admin_key_sha256_check CHECK ((length(admin_key_sha256) = 32)),
    CONSTRAINT console_sessions_check CHECK (((app_id IS NULL) = (key_id IS NULL))),
    CONSTRAINT console_sessions_check1 CHECK (((key_id IS NULL) <> (admin_key_sha256 IS NULL))),
    CONSTRAINT console_sessions_check2 CHECK ((expires_at > created_at)),
    CONSTRAINT console_sessions_csrf_token_check CHECK (((length(csrf_token) >= 32) AND (length(csrf_token) <= 128))),
    CONSTRAINT console_sessions_session_sha256_check CHECK ((length(session_sha256) = 32))
);

CREATE TABLE public.deliveries (
    id bigint NOT NULL,
    "position" bigint NOT NULL,
    app_id public.liveline_id NOT NULL,
    outcome text NOT NULL,
    attempt integer NOT NULL,
    apns_id uuid,
    device_token text,
    priority smallint,
    status integer,
    reason text,
    latency_us bigint,
    attempted_at timestamp with time zone NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    channel_id text,
    token_position bigint,
    CONSTRAINT deliveries_attempt_check CHECK ((attempt >= 0)),
    CONSTRAINT deliveries_latency_us_check CHECK ((latency_us >= 0)),
    CONSTRAINT deliveries_outcome_check CHECK ((outcome = ANY (ARRAY['delivered'::text, 'retrying'::text, 'failed'::text, 'token_invalidated'::text, 'app_suspended'::text, 'superseded'::text, 'awaiting_token'::text, 'no_credentials'::text, 'undeliverable'::text, 'expired'::text, 'sending'::text]))),
    CONSTRAINT deliveries_priority_check CHECK ((priority = ANY (ARRAY[5, 10])))
)
PARTITION BY RANGE (recorded_at);

CREATE TABLE public.deliveries_before_partitions (
    id bigint DEFAULT NULL NOT NULL,
    "position" bigint NOT NULL,
    app_id public.liveline_id NOT NULL,
    outcome text NOT NULL,
    attempt integer NOT NULL,
    apns_id uuid,
    device_token text,
    priority smallint,
    status integer,
    reason text,
    latency_us bigint,
    attempted_at timestamp with time zone NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    channel_id text,
    token_position bigint,
    CONSTRAINT deliveries_attempt_check CHECK ((attempt >= 0)),
    CONSTRAINT deliveries_latency_us_check CHECK ((latency_us >= 0)),
    CONSTRAINT deliveries_outcome_check CHECK ((outcome = ANY (ARRAY['delivered'::text, 'retrying'::text, 'failed'::text, 'token_invalidated'::text, 'app_suspended'::text, 'superseded'::text, 'awaiting_token'::text, 'no_credentials'::text, 'undeliverable'::text, 'expired'::text, 'sending'::text]))),
    CONSTRAINT deliveries_priority_check CHECK ((priority = ANY (ARRAY[5, 10])))
);

CREATE SEQUENCE public.deliveries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.deliveries_id_seq OWNED BY public.deliveries.id;

CREATE VIEW public.deliveries_per_minute AS
 SELECT date_trunc('minute'::text, deliveries.attempted_at) AS minute,
    deliveries.app_id,
    deliveries.outcome,
    count(*) AS deliveries
   FROM public.deliveries
  GROUP BY (date_trunc('minute'::text, deliveries.attempted_at)), deliveries.app_id, deliveries.outcome;

CREATE VIEW public.delivery_failures_by_reason AS
 SELECT date_trunc('minute'::text, deliveries.attempted_at) AS minute,
    deliveries.app_id,
    deliveries.status,
    deliveries.reason,
    count(*) AS failures
   FROM public.deliveries
  WHERE ((deliveries.attempt > 0) AND (deliveries.outcome <> 'delivered'::text))
  GROUP BY (date_trunc('minute'::text, deliveries.attempted_at)), deliveries.app_id, deliveries.status, deliveries.reason;

CREATE TABLE public.delivery_holds (
    app_id public.liveline_id NOT NULL,
    activity_id public.liveline_id NOT NULL,
    "position" bigint NOT NULL,
    starts_activity boolean NOT NULL,
    held_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE VIEW public.delivery_latency_per_minute AS
 SELECT date_trunc('minute'::text, d.attempted_at) AS minute,
    d.app_id,
    count(*) AS delivered,
    percentile_cont((0.5)::double precision) WITHIN GROUP (ORDER BY (((EXTRACT(epoch FROM (d.attempted_at - e.recorded_at)) + ((d.latency_us)::numeric / '1000000'::numeric)))::double precision)) AS commit_to_answer_p50_seconds,
    percentile_cont((0.99)::double precision) WITHIN GROUP (ORDER BY (((EXTRACT(epoch FROM (d.attempted_at - e.recorded_at)) + ((d.latency_us)::numeric / '1000000'::numeric)))::double precision)) AS commit_to_answer_p99_seconds
   FROM (public.deliveries d
     JOIN public.events e ON ((e."position" = d."position")))
  WHERE (d.outcome = 'delivered'::text)
  GROUP BY (date_trunc('minute'::text, d.attempted_at)), d.app_id;

CREATE TABLE public.delivery_shards (
    shard integer NOT NULL,
    "position" bigint NOT NULL,
    owner text,
    lease_expires_at timestamp with time zone,
    CONSTRAINT delivery_shards_shard_check CHECK ((shard >= 0))
);

CREATE TABLE public.delivery_suspensions (
    id bigint NOT NULL,
    app_id public.liveline_id NOT NULL,
    status integer NOT NULL,
    reason text NOT NULL,
    credentials_updated_at timestamp with time zone NOT NULL,
    suspended_at timestamp with time zone DEFAULT now() NOT NULL
);

ALTER TABLE public.delivery_suspensions ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.delivery_suspensions_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.delivery_workers (
    worker_id text NOT NULL,
    heartbeat_at timestamp with time zone NOT NULL
);

CREATE TABLE public.device_open_counts (
    app_id public.liveline_id NOT NULL,
    device_id text NOT NULL,
    open integer DEFAULT 0 NOT NULL,
    CONSTRAINT device_open_counts_open_check CHECK ((open >= 0))
);

CREATE TABLE public.device_references (
    reference uuid DEFAULT gen_random_uuid() NOT NULL,
    app_id public.liveline_id NOT NULL,
    device_id public.liveline_id,
    key bytea DEFAULT sha256((uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()))),
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    erased_at timestamp with time zone,
    CONSTRAINT device_references_check CHECK ((((device_id IS NULL) = (erased_at IS NOT NULL)) AND ((key IS NULL) = (erased_at IS NOT NULL)))),
    CONSTRAINT device_references_key_check CHECK ((octet_length(key) = 32))
);

CREATE VIEW public.erasure_progress AS
SELECT
    NULL::bigint AS id,
    NULL::public.liveline_id AS app_id,
    NULL::text AS scope,
    NULL::public.liveline_id AS activity_id,
    NULL::uuid AS reference,
    NULL::text AS requested_by,
    NULL::timestamp with time zone AS requested_at,
    NULL::timestamp with time zone AS finished_at,
    NULL::bigint AS activities,
    NULL::bigint AS erased;

CREATE TABLE public.erasure_targets (
    erasure_id bigint NOT NULL,
    app_id public.liveline_id NOT NULL,
    activity_id public.liveline_id NOT NULL,
    erased_at timestamp with time zone
);

CREATE TABLE public.erasures (
    id bigint NOT NULL,
    app_id public.liveline_id NOT NULL,
    scope text NOT NULL,
    activity_id public.liveline_id,
    reference uuid NOT NULL,
    requested_by text NOT NULL,
    requested_at timestamp with time zone DEFAULT now() NOT NULL,
    finished_at timestamp with time zone,
    CONSTRAINT erasures_check CHECK (((scope = 'activity'::text) = (activity_id IS NOT NULL))),
    CONSTRAINT erasures_requested_by_check CHECK ((requested_by = ANY (ARRAY['app_api'::text, 'command_line'::text]))),
    CONSTRAINT erasures_scope_check CHECK ((scope = ANY (ARRAY['activity'::text, 'device'::text])))
);

ALTER TABLE public.erasures ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.erasures_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.event_traces (
    "position" bigint NOT NULL,
    recorded_at timestamp with time zone NOT NULL,
    traceparent text NOT NULL,
    tracestate text,
    CONSTRAINT event_traces_traceparent_check CHECK ((traceparent ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'::text)),
    CONSTRAINT event_traces_tracestate_check CHECK ((length(tracestate) <= 512))
)
PARTITION BY RANGE (recorded_at);

CREATE TABLE public.event_traces_before_partitions (
    "position" bigint NOT NULL,
    recorded_at timestamp with time zone NOT NULL,
    traceparent text NOT NULL,
    tracestate text,
    CONSTRAINT event_traces_traceparent_check CHECK ((traceparent ~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'::text)),
    CONSTRAINT event_traces_tracestate_check CHECK ((length(tracestate) <= 512))
);

CREATE TABLE public.events_before_partitions (
    "position" bigint NOT NULL,
    transaction_id xid8 DEFAULT pg_current_xact_id() NOT NULL,
    app_id public.liveline_id NOT NULL,
    activity_id public.liveline_id NOT NULL,
    version integer NOT NULL,
    type text NOT NULL,
    data jsonb DEFAULT '{}'::jsonb NOT NULL,
    caused_by public.event_cause NOT NULL,
    occurred_at timestamp with time zone NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    stream_recorded_at timestamp with time zone DEFAULT NULL NOT NULL,
    CONSTRAINT events_before_partitions_bound CHECK ((stream_recorded_at < '2000-01-01 00:00:00+00'::timestamp with time zone)),
    CONSTRAINT events_data_check CHECK ((jsonb_typeof(data) = 'object'::text)),
    CONSTRAINT events_position_in_transaction CHECK ((("position" >> 16) = ((transaction_id)::text)::bigint)),
    CONSTRAINT events_type_check CHECK ((type ~ '^activity\.[a-z_]+$'::text)),
    CONSTRAINT events_version_check CHECK ((version > 0))
);

CREATE VIEW public.events_per_minute AS
 SELECT date_trunc('minute'::text, events.occurred_at) AS minute,
    events.app_id,
    events.type,
    count(*) AS events
   FROM public.events
  GROUP BY (date_trunc('minute'::text, events.occurred_at)), events.app_id, events.type;

CREATE TABLE public.idempotency_keys (
    app_id public.liveline_id NOT NULL,
    idempotency_key text NOT NULL,
    request_sha256 bytea NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    activity_id text NOT NULL,
    outcome jsonb NOT NULL,
    CONSTRAINT idempotency_keys_idempotency_key_check CHECK (((length(idempotency_key) >= 1) AND (length(idempotency_key) <= 255))),
    CONSTRAINT idempotency_keys_outcome_check CHECK ((jsonb_typeof(outcome) = 'object'::text))
);

CREATE TABLE public.push_token_invalidations (
    id bigint NOT NULL,
    app_id public.liveline_id NOT NULL,
    activity_id public.liveline_id NOT NULL,
    device_token text NOT NULL,
    "position" bigint NOT NULL,
    status integer NOT NULL,
    reason text NOT NULL,
    invalid_since timestamp with time zone NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL
)
PARTITION BY RANGE (recorded_at);

CREATE VIEW public.invalidated_tokens_per_minute AS
 SELECT date_trunc('minute'::text, push_token_invalidations.recorded_at) AS minute,
    push_token_invalidations.app_id,
    push_token_invalidations.reason,
    count(*) AS tokens
   FROM public.push_token_invalidations
  GROUP BY (date_trunc('minute'::text, push_token_invalidations.recorded_at)), push_token_invalidations.app_id, push_token_invalidations.reason;

CREATE VIEW public.liveline_activity_rows AS
 SELECT (activities.app_id)::text AS app_id,
    (activities.activity_id)::text AS activity_id,
    activities.state,
    activities.version,
    activities.activity_type,
    activities.attributes,
    activities.content_state,
    activities.stale_date,
    activities.relevance_score,
    activities.push_type,
    activities.push_token,
    activities.device_id,
    activities.start_date,
    activities.last_timestamp,
    activities.requested_at,
    activities.activated_at,
    activities.ended_at,
    activities.dismissed_at,
    activities.dismissal_date,
    activities.next_deadline_at,
    activities.next_deadline_kind,
    activities.last_event_at,
    activities.style,
    activities.end_reason,
    activities.priority_updates
   FROM public.activities;

CREATE TABLE public.liveline_append_gate (
);

CREATE VIEW public.liveline_replay_rows AS
 SELECT activities_replay.app_id,
    activities_replay.activity_id,
    activities_replay.state,
    activities_replay.version,
    activities_replay.activity_type,
    activities_replay.attributes,
    activities_replay.content_state,
    activities_replay.stale_date,
    activities_replay.relevance_score,
    activities_replay.push_type,
    activities_replay.push_token,
    activities_replay.device_id,
    activities_replay.start_date,
    activities_replay.last_timestamp,
    activities_replay.requested_at,
    activities_replay.activated_at,
    activities_replay.ended_at,
    activities_replay.dismissed_at,
    activities_replay.dismissal_date,
    activities_replay.next_deadline_at,
    activities_replay.next_deadline_kind,
    activities_replay.last_event_at,
    activities_replay.style,
    activities_replay.end_reason,
    activities_replay.priority_updates
   FROM public.activities_replay;

CREATE TABLE public.log_partitions (
    table_name text NOT NULL,
    parent text NOT NULL,
    from_time timestamp with time zone NOT NULL,
    to_time timestamp with time zone NOT NULL,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    settled_at timestamp with time zone,
    archive jsonb,
    retired_at timestamp with time zone,
    CONSTRAINT log_partitions_check CHECK ((to_time > from_time)),
    CONSTRAINT log_partitions_parent_check CHECK ((parent = ANY (ARRAY['events'::text, 'deliveries'::text, 'push_token_invalidations'::text, 'rejections'::text, 'reload_deliveries'::text, 'event_traces'::text])))
);

CREATE VIEW public.log_partition_sizes AS
 SELECT log_partitions.table_name AS partition,
    log_partitions.from_time,
    log_partitions.to_time,
    pg_total_relation_size(to_regclass(quote_ident(log_partitions.table_name))) AS bytes,
    log_partitions.parent AS table_name,
    log_partitions.settled_at,
    log_partitions.retired_at,
    ((log_partitions.archive ->> 'rows'::text))::bigint AS archived_rows,
    (((log_partitions.archive -> 'file'::text) ->> 'bytes'::text))::bigint AS archived_bytes
   FROM public.log_partitions;

CREATE TABLE public.log_partitioning (
    only_row boolean DEFAULT true NOT NULL,
    partition_interval interval DEFAULT '1 day'::interval NOT NULL,
    partitions_ahead integer DEFAULT 2 NOT NULL,
    CONSTRAINT log_partitioning_only_row_check CHECK (only_row),
    CONSTRAINT log_partitioning_partition_interval_check CHECK ((partition_interval >= '00:01:00'::interval)),
    CONSTRAINT log_partitioning_partitions_ahead_check CHECK (((partitions_ahead >= 1) AND (partitions_ahead <= 100)))
);

CREATE VIEW public.open_activities AS
 SELECT activities.app_id,
    activities.state,
    count(*) AS activities
   FROM public.activities
  WHERE (activities.state = ANY (ARRAY['pending'::text, 'active'::text, 'stale'::text]))
  GROUP BY activities.app_id, activities.state;

CREATE TABLE public.push_to_start_token_changes (
    id bigint NOT NULL,
    app_id public.liveline_id NOT NULL,
    device_id public.liveline_id NOT NULL,
    activity_type text NOT NULL,
    change text NOT NULL,
    token text,
    status integer,
    reason text,
    invalid_since timestamp with time zone,
    changed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT push_to_start_token_changes_activity_type_check CHECK (((char_length(activity_type) >= 1) AND (char_length(activity_type) <= 128))),
    CONSTRAINT push_to_start_token_changes_change_check CHECK ((change = ANY (ARRAY['registered'::text, 'removed'::text, 'invalidated'::text]))),
    CONSTRAINT push_to_start_token_changes_check CHECK (((change = 'removed'::text) = (token IS NULL))),
    CONSTRAINT push_to_start_token_changes_check1 CHECK (((change = 'invalidated'::text) = ((invalid_since IS NOT NULL) AND (reason IS NOT NULL)))),
    CONSTRAINT push_to_start_token_changes_token_check CHECK (((token ~ '^[!-~]+$'::text) AND (length(token) <= 512)))
);

ALTER TABLE public.push_to_start_token_changes ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.push_to_start_token_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE VIEW public.push_to_start_tokens AS
 SELECT registration.app_id,
    registration.device_id,
    registration.activity_type,
    registration.token,
    registration.changed_at AS registered_at
   FROM ( SELECT DISTINCT ON (push_to_start_token_changes.app_id, push_to_start_token_changes.device_id, push_to_start_token_changes.activity_type) push_to_start_token_changes.id,
            push_to_start_token_changes.app_id,
            push_to_start_token_changes.device_id,
            push_to_start_token_changes.activity_type,
            push_to_start_token_changes.change,
            push_to_start_token_changes.token,
            push_to_start_token_changes.status,
            push_to_start_token_changes.reason,
            push_to_start_token_changes.invalid_since,
            push_to_start_token_changes.changed_at
           FROM public.push_to_start_token_changes
          WHERE (push_to_start_token_changes.change = 'registered'::text)
          ORDER BY push_to_start_token_changes.app_id, push_to_start_token_changes.device_id, push_to_start_token_changes.activity_type, push_to_start_token_changes.id DESC) registration
  WHERE (NOT (EXISTS ( SELECT
           FROM public.push_to_start_token_changes later
          WHERE (((later.app_id)::text = (registration.app_id)::text) AND ((later.device_id)::text = (registration.device_id)::text) AND (later.activity_type = registration.activity_type) AND (later.id > registration.id) AND ((later.change = 'removed'::text) OR ((later.change = 'invalidated'::text) AND (later.token = registration.token) AND (later.invalid_since >= registration.changed_at)))))));

CREATE TABLE public.push_token_invalidations_before_partitions (
    id bigint DEFAULT NULL NOT NULL,
    app_id public.liveline_id NOT NULL,
    activity_id public.liveline_id NOT NULL,
    device_token text NOT NULL,
    "position" bigint NOT NULL,
    status integer NOT NULL,
    reason text NOT NULL,
    invalid_since timestamp with time zone NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE SEQUENCE public.push_token_invalidations_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.push_token_invalidations_id_seq OWNED BY public.push_token_invalidations.id;

CREATE TABLE public.rejections (
    id bigint NOT NULL,
    app_id public.liveline_id NOT NULL,
    activity_id text,
    command text NOT NULL,
    code text NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    occurred_at timestamp with time zone DEFAULT now() NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL
)
PARTITION BY RANGE (recorded_at);

CREATE TABLE public.rejections_before_partitions (
    id bigint DEFAULT NULL NOT NULL,
    app_id public.liveline_id NOT NULL,
    activity_id text,
    command text NOT NULL,
    code text NOT NULL,
    details jsonb DEFAULT '{}'::jsonb NOT NULL,
    occurred_at timestamp with time zone DEFAULT now() NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE SEQUENCE public.rejections_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.rejections_id_seq OWNED BY public.rejections.id;

CREATE VIEW public.rejections_per_minute AS
 SELECT date_trunc('minute'::text, rejections.occurred_at) AS minute,
    rejections.app_id,
    rejections.code,
    count(*) AS rejections
   FROM public.rejections
  GROUP BY (date_trunc('minute'::text, rejections.occurred_at)), rejections.app_id, rejections.code;

CREATE TABLE public.reload_deliveries (
    id bigint NOT NULL,
    reload_id bigint NOT NULL,
    app_id public.liveline_id NOT NULL,
    device_id public.liveline_id NOT NULL,
    push_type text NOT NULL,
    control_kind text NOT NULL,
    outcome text NOT NULL,
    attempt integer NOT NULL,
    apns_id uuid,
    device_token text,
    priority smallint,
    status integer,
    reason text,
    latency_us bigint,
    attempted_at timestamp with time zone NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT reload_deliveries_attempt_check CHECK ((attempt >= 0)),
    CONSTRAINT reload_deliveries_latency_us_check CHECK ((latency_us >= 0)),
    CONSTRAINT reload_deliveries_outcome_check CHECK ((outcome = ANY (ARRAY['delivered'::text, 'retrying'::text, 'failed'::text, 'token_invalidated'::text, 'app_suspended'::text, 'no_credentials'::text, 'coalesced'::text]))),
    CONSTRAINT reload_deliveries_priority_check CHECK ((priority = ANY (ARRAY[5, 10]))),
    CONSTRAINT reload_deliveries_push_type_check CHECK ((push_type = ANY (ARRAY['widgets'::text, 'controls'::text])))
)
PARTITION BY RANGE (recorded_at);

CREATE SEQUENCE public.reload_deliveries_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.reload_deliveries_id_seq OWNED BY public.reload_deliveries.id;

CREATE TABLE public.reload_deliveries_before_partitions (
    id bigint DEFAULT nextval('public.reload_deliveries_id_seq'::regclass) NOT NULL,
    reload_id bigint NOT NULL,
    app_id public.liveline_id NOT NULL,
    device_id public.liveline_id NOT NULL,
    push_type text NOT NULL,
    control_kind text NOT NULL,
    outcome text NOT NULL,
    attempt integer NOT NULL,
    apns_id uuid,
    device_token text,
    priority smallint,
    status integer,
    reason text,
    latency_us bigint,
    attempted_at timestamp with time zone NOT NULL,
    recorded_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT reload_deliveries_attempt_check CHECK ((attempt >= 0)),
    CONSTRAINT reload_deliveries_latency_us_check CHECK ((latency_us >= 0)),
    CONSTRAINT reload_deliveries_outcome_check CHECK ((outcome = ANY (ARRAY['delivered'::text, 'retrying'::text, 'failed'::text, 'token_invalidated'::text, 'app_suspended'::text, 'no_credentials'::text, 'coalesced'::text]))),
    CONSTRAINT reload_deliveries_priority_check CHECK ((priority = ANY (ARRAY[5, 10]))),
    CONSTRAINT reload_deliveries_push_type_check CHECK ((push_type = ANY (ARRAY['widgets'::text, 'controls'::text])))
);

CREATE VIEW public.reload_deliveries_per_minute AS
 SELECT date_trunc('minute'::text, reload_deliveries.attempted_at) AS minute,
    reload_deliveries.app_id,
    reload_deliveries.push_type,
    reload_deliveries.outcome,
    count(*) AS deliveries
   FROM public.reload_deliveries
  GROUP BY (date_trunc('minute'::text, reload_deliveries.attempted_at)), reload_deliveries.app_id, reload_deliveries.push_type, reload_deliveries.outcome;

CREATE TABLE public.reload_fanouts (
    shard smallint NOT NULL,
    reload_id bigint NOT NULL,
    after_device text DEFAULT ''::text NOT NULL,
    CONSTRAINT reload_fanouts_shard_check CHECK ((shard >= 0))
);

CREATE TABLE public.reload_requests (
    id bigint NOT NULL,
    app_id public.liveline_id NOT NULL,
    push_type text NOT NULL,
    control_kind text NOT NULL,
    widget_kinds text[],
    device_ids text[],
    activity_id public.liveline_id,
    version integer,
    idempotency_key text,
    request_sha256 bytea,
    targets integer NOT NULL,
    requested_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT reload_requests_check CHECK (((push_type = 'widgets'::text) = (control_kind = ''::text))),
    CONSTRAINT reload_requests_check1 CHECK (((widget_kinds IS NULL) OR (push_type = 'widgets'::text))),
    CONSTRAINT reload_requests_check2 CHECK (((activity_id IS NULL) = (version IS NULL))),
    CONSTRAINT reload_requests_check3 CHECK (((activity_id IS NULL) OR (device_ids IS NOT NULL))),
    CONSTRAINT reload_requests_check4 CHECK (((idempotency_key IS NULL) = (request_sha256 IS NULL))),
    CONSTRAINT reload_requests_control_kind_check CHECK ((char_length(control_kind) <= 128)),
    CONSTRAINT reload_requests_device_ids_check CHECK (((cardinality(device_ids) >= 1) AND (cardinality(device_ids) <= 1000))),
    CONSTRAINT reload_requests_idempotency_key_check CHECK (((length(idempotency_key) >= 1) AND (length(idempotency_key) <= 255))),
    CONSTRAINT reload_requests_push_type_check CHECK ((push_type = ANY (ARRAY['widgets'::text, 'controls'::text]))),
    CONSTRAINT reload_requests_targets_check CHECK ((targets >= 0)),
    CONSTRAINT reload_requests_widget_kinds_check CHECK (((cardinality(widget_kinds) >= 1) AND (cardinality(widget_kinds) <= 100)))
);

CREATE VIEW public.reload_progress AS
 SELECT r.id AS reload_id,
    r.app_id,
    r.push_type,
    r.control_kind,
    r.targets,
    r.requested_at,
    d.outcome,
    count(d.device_id) AS devices
   FROM (public.reload_requests r
     LEFT JOIN LATERAL ( SELECT DISTINCT ON (reload_deliveries.device_id) reload_deliveries.device_id,
            reload_deliveries.outcome
           FROM public.reload_deliveries
          WHERE (reload_deliveries.reload_id = r.id)
          ORDER BY reload_deliveries.device_id, reload_deliveries.id DESC) d ON (true))
  GROUP BY r.id, r.app_id, r.push_type, r.control_kind, r.targets, r.requested_at, d.outcome;

ALTER TABLE public.reload_requests ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.reload_requests_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.reload_shards (
    shard integer NOT NULL,
    owner text,
    lease_expires_at timestamp with time zone,
    CONSTRAINT reload_shards_shard_check CHECK ((shard >= 0))
);

CREATE TABLE public.reload_token_changes (
    id bigint NOT NULL,
    app_id public.liveline_id NOT NULL,
    device_id public.liveline_id NOT NULL,
    push_type text NOT NULL,
    control_kind text NOT NULL,
    change text NOT NULL,
    token text,
    widgets jsonb,
    status integer,
    reason text,
    invalid_since timestamp with time zone,
    changed_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT reload_token_changes_change_check CHECK ((change = ANY (ARRAY['registered'::text, 'removed'::text, 'invalidated'::text]))),
    CONSTRAINT reload_token_changes_check CHECK (((push_type = 'widgets'::text) = (control_kind = ''::text))),
    CONSTRAINT reload_token_changes_check1 CHECK (((change = 'removed'::text) = (token IS NULL))),
    CONSTRAINT reload_token_changes_check2 CHECK (((change = 'invalidated'::text) = ((invalid_since IS NOT NULL) AND (reason IS NOT NULL)))),
    CONSTRAINT reload_token_changes_check3 CHECK (((widgets IS NOT NULL) = ((push_type = 'widgets'::text) AND (change = 'registered'::text)))),
    CONSTRAINT reload_token_changes_control_kind_check CHECK ((char_length(control_kind) <= 128)),
    CONSTRAINT reload_token_changes_push_type_check CHECK ((push_type = ANY (ARRAY['widgets'::text, 'controls'::text]))),
    CONSTRAINT reload_token_changes_token_check CHECK (((token ~ '^[!-~]+$'::text) AND (length(token) <= 512))),
    CONSTRAINT reload_token_changes_widgets_check CHECK ((jsonb_typeof(widgets) = 'array'::text))
);

ALTER TABLE public.reload_token_changes ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (
    SEQUENCE NAME public.reload_token_changes_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);

CREATE TABLE public.reload_tokens (
    app_id public.liveline_id NOT NULL,
    push_type text NOT NULL,
    control_kind text NOT NULL,
    shard smallint NOT NULL,
    device_id public.liveline_id NOT NULL,
    token text NOT NULL,
    widget_kinds text[] NOT NULL,
    registered_at timestamp with time zone NOT NULL,
    change_id bigint NOT NULL,
    due_reload bigint,
    due_at timestamp with time zone,
    due_attempt integer DEFAULT 0 NOT NULL,
    CONSTRAINT reload_tokens_check CHECK (((due_reload IS NULL) = (due_at IS NULL))),
    CONSTRAINT reload_tokens_due_attempt_check CHECK ((due_attempt >= 0)),
    CONSTRAINT reload_tokens_push_type_check CHECK ((push_type = ANY (ARRAY['widgets'::text, 'controls'::text]))),
    CONSTRAINT reload_tokens_shard_check CHECK ((shard >= 0))
)
WITH (fillfactor='80');

CREATE TABLE public.reload_workers (
    worker_id text NOT NULL,
    heartbeat_at timestamp with time zone NOT NULL
);

CREATE TABLE public.remote_starts (
    app_id public.liveline_id NOT NULL,
    activity_id public.liveline_id NOT NULL,
    device_id public.liveline_id NOT NULL,
    activity_type text NOT NULL,
    token text NOT NULL,
    "position" bigint NOT NULL,
    accepted_at timestamp with time zone NOT NULL,
    verdict text,
    settled_at timestamp with time zone,
    CONSTRAINT remote_starts_check CHECK (((verdict IS NULL) = (settled_at IS NULL))),
    CONSTRAINT remote_starts_verdict_check CHECK ((verdict = ANY (ARRAY['confirmed'::text, 'unconfirmed'::text, 'dismissed'::text])))
);

CREATE VIEW public.remote_start_verdicts_per_minute AS
 SELECT date_trunc('minute'::text, remote_starts.settled_at) AS minute,
    remote_starts.app_id,
    remote_starts.verdict,
    count(*) AS starts
   FROM public.remote_starts
  WHERE (remote_starts.verdict IS NOT NULL)
  GROUP BY (date_trunc('minute'::text, remote_starts.settled_at)), remote_starts.app_id, remote_starts.verdict;

CREATE TABLE public.retired_activities (
    app_id public.liveline_id NOT NULL,
    activity_id public.liveline_id NOT NULL,
    device_id public.liveline_id NOT NULL,
    retired_at timestamp with time zone DEFAULT now() NOT NULL
);

CREATE VIEW public.state_intervals AS
 WITH transitions AS (
         SELECT events.app_id,
            events.activity_id,
            events.occurred_at,
                CASE events.type
                    WHEN 'activity.requested'::text THEN
                    CASE
                        WHEN (((events.data ->> 'startDate'::text))::timestamp with time zone > events.occurred_at) THEN 'pending'::text
                        ELSE 'active'::text
                    END
                    WHEN 'activity.started'::text THEN 'active'::text
                    WHEN 'activity.became_stale'::text THEN 'stale'::text
                    WHEN 'activity.ended'::text THEN 'ended'::text
                    WHEN 'activity.dismissed'::text THEN 'dismissed'::text
                    WHEN 'activity.updated'::text THEN 'active'::text
                    ELSE NULL::text
                END AS state,
            events.version
           FROM public.events
          WHERE (events.type = ANY (ARRAY['activity.requested'::text, 'activity.started'::text, 'activity.became_stale'::text, 'activity.ended'::text, 'activity.dismissed'::text, 'activity.updated'::text]))
        ), changes AS (
         SELECT transitions.app_id,
            transitions.activity_id,
            transitions.occurred_at,
            transitions.state,
            transitions.version,
            lag(transitions.state) OVER (PARTITION BY transitions.app_id, transitions.activity_id ORDER BY transitions.version) AS previous
           FROM transitions
        ), entered AS (
         SELECT changes.app_id,
            changes.activity_id,
            changes.state,
            changes.occurred_at AS entered_at,
            changes.version
           FROM changes
          WHERE (changes.previous IS DISTINCT FROM changes.state)
        )
 SELECT entered.app_id,
    entered.activity_id,
    entered.state,
    entered.entered_at,
    lead(entered.entered_at) OVER (PARTITION BY entered.app_id, entered.activity_id ORDER BY entered.version) AS left_at,
    (COALESCE(lead(entered.entered_at) OVER (PARTITION BY entered.app_id, entered.activity_id ORDER BY entered.version),
        CASE
            WHEN (entered.state = 'dismissed'::text) THEN entered.entered_at
            ELSE now()
        END) - entered.entered_at) AS duration
   FROM entered;

CREATE VIEW public.time_in_state AS
 SELECT state_intervals.app_id,
    state_intervals.state,
    count(*) AS intervals,
    avg(state_intervals.duration) AS average,
    sum(state_intervals.duration) AS total
   FROM public.state_intervals
  WHERE (state_intervals.state <> 'dismissed'::text)
  GROUP BY state_intervals.app_id, state_intervals.state;

ALTER TABLE ONLY public.deliveries ATTACH PARTITION public.deliveries_before_partitions FOR VALUES FROM (MINVALUE) TO (date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'));

ALTER TABLE ONLY public.event_traces ATTACH PARTITION public.event_traces_before_partitions FOR VALUES FROM (MINVALUE) TO (date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'));

ALTER TABLE ONLY public.events ATTACH PARTITION public.events_before_partitions FOR VALUES FROM (MINVALUE) TO ('2000-01-01 00:00:00+00');

ALTER TABLE ONLY public.push_token_invalidations ATTACH PARTITION public.push_token_invalidations_before_partitions FOR VALUES FROM (MINVALUE) TO (date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'));

ALTER TABLE ONLY public.rejections ATTACH PARTITION public.rejections_before_partitions FOR VALUES FROM (MINVALUE) TO (date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'));

ALTER TABLE ONLY public.reload_deliveries ATTACH PARTITION public.reload_deliveries_before_partitions FOR VALUES FROM (MINVALUE) TO (date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'));

ALTER TABLE ONLY public.deliveries ALTER COLUMN id SET DEFAULT nextval('public.deliveries_id_seq'::regclass);

ALTER TABLE ONLY public.push_token_invalidations ALTER COLUMN id SET DEFAULT nextval('public.push_token_invalidations_id_seq'::regclass);

ALTER TABLE ONLY public.rejections ALTER COLUMN id SET DEFAULT nextval('public.rejections_id_seq'::regclass);

ALTER TABLE ONLY public.reload_deliveries ALTER COLUMN id SET DEFAULT nextval('public.reload_deliveries_id_seq'::regclass);

ALTER TABLE ONLY public.apps
    ADD CONSTRAINT apps_pkey PRIMARY KEY (app_id);

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (key_id);

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_secret_sha256_key UNIQUE (secret_sha256);

CREATE INDEX api_keys_app ON public.api_keys USING btree (app_id);

CREATE INDEX events_before_partitions_app_position ON public.events_before_partitions USING btree (app_id, "position");

CREATE INDEX activities_next_deadline ON public.activities USING btree (next_deadline_at) WHERE (next_deadline_at IS NOT NULL);

ALTER TABLE ONLY public.service_limits
    ADD CONSTRAINT service_limits_pkey PRIMARY KEY (singleton);

ALTER TABLE ONLY public.global_open_stripes
    ADD CONSTRAINT global_open_stripes_pkey PRIMARY KEY (stripe);

ALTER TABLE ONLY public.device_open_counts
    ADD CONSTRAINT device_open_counts_pkey PRIMARY KEY (app_id, device_id);

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (app_id, idempotency_key);

CREATE INDEX rejections_before_partitions_app_code_time ON public.rejections_before_partitions USING btree (app_id, code, occurred_at);

CREATE INDEX rejections_before_partitions_time ON public.rejections_before_partitions USING btree (occurred_at);

CREATE INDEX activities_app_state ON public.activities USING btree (app_id, state, requested_at DESC, activity_id);

CREATE INDEX activities_open_by_device ON public.activities USING btree (app_id, device_id) WHERE ((device_id IS NOT NULL) AND (state = ANY (ARRAY['pending'::text, 'active'::text, 'stale'::text])));

ALTER TABLE ONLY public.app_open_stripes
    ADD CONSTRAINT app_open_stripes_pkey PRIMARY KEY (app_id, stripe);

CREATE INDEX activities_app_newest ON public.activities USING btree (app_id, requested_at DESC, activity_id);

ALTER TABLE ONLY public.activities_replay_changes
    ADD CONSTRAINT activities_replay_changes_pkey PRIMARY KEY (app_id, activity_id);

ALTER TABLE ONLY public.admin_changes
    ADD CONSTRAINT admin_changes_pkey PRIMARY KEY (id);

CREATE INDEX admin_changes_app_time ON public.admin_changes USING btree (app_id, occurred_at);

ALTER TABLE ONLY public.activities_replay
    ADD CONSTRAINT activities_replay_pkey PRIMARY KEY (app_id, activity_id);

ALTER TABLE ONLY public.apns_credentials
    ADD CONSTRAINT apns_credentials_pkey PRIMARY KEY (app_id);

CREATE INDEX push_token_invalidations_before_partitions_activity ON public.push_token_invalidations_before_partitions USING btree (app_id, activity_id);

ALTER TABLE ONLY public.delivery_suspensions
    ADD CONSTRAINT delivery_suspensions_pkey PRIMARY KEY (id);

CREATE INDEX delivery_suspensions_app ON public.delivery_suspensions USING btree (app_id, id);

ALTER TABLE ONLY public.delivery_shards
    ADD CONSTRAINT delivery_shards_pkey PRIMARY KEY (shard);

ALTER TABLE ONLY public.delivery_workers
    ADD CONSTRAINT delivery_workers_pkey PRIMARY KEY (worker_id);

ALTER TABLE ONLY public.push_to_start_token_changes
    ADD CONSTRAINT push_to_start_token_changes_pkey PRIMARY KEY (id);

CREATE INDEX push_to_start_token_changes_device ON public.push_to_start_token_changes USING btree (app_id, device_id, activity_type, id);

CREATE INDEX events_before_partitions_remote_starts ON public.events_before_partitions USING btree (app_id, ((data ->> 'deviceId'::text)), occurred_at) WHERE ((type = 'activity.requested'::text) AND (data ? 'remoteStart'::text));

ALTER TABLE ONLY public.broadcast_channels
    ADD CONSTRAINT broadcast_channels_pkey PRIMARY KEY (app_id, channel_id);

CREATE INDEX broadcast_channels_open ON public.broadcast_channels USING btree (app_id, created_at) WHERE (deleted_at IS NULL);

ALTER TABLE ONLY public.activities
    ADD CONSTRAINT activities_pkey PRIMARY KEY (app_id, activity_id);

ALTER TABLE ONLY public.delivery_holds
    ADD CONSTRAINT delivery_holds_pkey PRIMARY KEY (app_id, activity_id, "position");

CREATE INDEX idempotency_keys_created_at ON public.idempotency_keys USING btree (created_at);

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_pkey PRIMARY KEY ("position", stream_recorded_at);

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_stream_version UNIQUE (app_id, activity_id, version, stream_recorded_at);

CREATE INDEX events_app_position ON ONLY public.events USING btree (app_id, "position");

CREATE INDEX events_remote_starts ON ONLY public.events USING btree (app_id, ((data ->> 'deviceId'::text)), occurred_at) WHERE ((type = 'activity.requested'::text) AND (data ? 'remoteStart'::text));

ALTER TABLE ONLY public.events_before_partitions
    ADD CONSTRAINT events_before_partitions_pkey PRIMARY KEY ("position", stream_recorded_at);

ALTER TABLE ONLY public.events_before_partitions
    ADD CONSTRAINT events_before_partitions_app_id_activity_id_version_stream__key UNIQUE (app_id, activity_id, version, stream_recorded_at);

ALTER TABLE ONLY public.log_partitioning
    ADD CONSTRAINT log_partitioning_pkey PRIMARY KEY (only_row);

ALTER TABLE ONLY public.log_partitions
    ADD CONSTRAINT log_partitions_pkey PRIMARY KEY (table_name);

CREATE UNIQUE INDEX log_partitions_parent_to_time ON public.log_partitions USING btree (parent, to_time);

CREATE INDEX activities_stream_time ON public.activities USING btree (stream_recorded_at);

CREATE INDEX activities_undismissed_stream_time ON public.activities USING btree (stream_recorded_at) WHERE (state <> 'dismissed'::text);

ALTER TABLE ONLY public.push_token_invalidations
    ADD CONSTRAINT push_token_invalidations_pkey PRIMARY KEY (id, recorded_at);

CREATE INDEX push_token_invalidations_activity ON ONLY public.push_token_invalidations USING btree (app_id, activity_id);

ALTER TABLE ONLY public.push_token_invalidations_before_partitions
    ADD CONSTRAINT push_token_invalidations_before_partitions_pkey PRIMARY KEY (id, recorded_at);

ALTER TABLE ONLY public.rejections
    ADD CONSTRAINT rejections_pkey PRIMARY KEY (id, recorded_at);

CREATE INDEX rejections_app_code_time ON ONLY public.rejections USING btree (app_id, code, occurred_at);

CREATE INDEX rejections_time ON ONLY public.rejections USING btree (occurred_at);

ALTER TABLE ONLY public.rejections_before_partitions
    ADD CONSTRAINT rejections_before_partitions_pkey PRIMARY KEY (id, recorded_at);

ALTER TABLE ONLY public.deliveries
    ADD CONSTRAINT deliveries_pkey PRIMARY KEY ("position", id, recorded_at);

ALTER TABLE ONLY public.deliveries_before_partitions
    ADD CONSTRAINT deliveries_before_partitions_pkey PRIMARY KEY ("position", id, recorded_at);

ALTER TABLE ONLY public.reload_token_changes
    ADD CONSTRAINT reload_token_changes_pkey PRIMARY KEY (id);

CREATE INDEX reload_token_changes_slot ON public.reload_token_changes USING btree (app_id, device_id, push_type, control_kind, id);

ALTER TABLE ONLY public.reload_tokens
    ADD CONSTRAINT reload_tokens_pkey PRIMARY KEY (app_id, push_type, control_kind, shard, device_id);

ALTER TABLE ONLY public.reload_requests
    ADD CONSTRAINT reload_requests_pkey PRIMARY KEY (id);

CREATE UNIQUE INDEX reload_requests_by_event ON public.reload_requests USING btree (app_id, activity_id, version) WHERE (activity_id IS NOT NULL);

CREATE INDEX reload_requests_by_idempotency_key ON public.reload_requests USING btree (app_id, idempotency_key) WHERE (idempotency_key IS NOT NULL);

CREATE INDEX reload_requests_by_activity ON public.reload_requests USING btree (app_id, activity_id) WHERE (activity_id IS NOT NULL);

ALTER TABLE ONLY public.reload_fanouts
    ADD CONSTRAINT reload_fanouts_pkey PRIMARY KEY (shard, reload_id);

CREATE INDEX reload_tokens_due ON public.reload_tokens USING btree (shard, due_at) WHERE (due_at IS NOT NULL);

ALTER TABLE ONLY public.reload_shards
    ADD CONSTRAINT reload_shards_pkey PRIMARY KEY (shard);

ALTER TABLE ONLY public.reload_workers
    ADD CONSTRAINT reload_workers_pkey PRIMARY KEY (worker_id);

ALTER TABLE ONLY public.reload_deliveries
    ADD CONSTRAINT reload_deliveries_pkey PRIMARY KEY (id, recorded_at);

CREATE INDEX reload_deliveries_by_reload ON ONLY public.reload_deliveries USING btree (reload_id, device_id, id);

CREATE INDEX reload_deliveries_by_device ON ONLY public.reload_deliveries USING btree (app_id, device_id, id);

ALTER TABLE ONLY public.reload_deliveries_before_partitions
    ADD CONSTRAINT reload_deliveries_before_partitions_pkey PRIMARY KEY (id, recorded_at);

CREATE INDEX reload_deliveries_before_partitions_reload_id_device_id_id_idx ON public.reload_deliveries_before_partitions USING btree (reload_id, device_id, id);

CREATE INDEX reload_deliveries_before_partitions_app_id_device_id_id_idx ON public.reload_deliveries_before_partitions USING btree (app_id, device_id, id);

CREATE INDEX activities_by_device ON public.activities USING btree (app_id, device_id) WHERE (device_id IS NOT NULL);

ALTER TABLE ONLY public.remote_starts
    ADD CONSTRAINT remote_starts_pkey PRIMARY KEY (app_id, activity_id);

CREATE INDEX remote_starts_waiting ON public.remote_starts USING btree (accepted_at) WHERE (verdict IS NULL);

CREATE INDEX remote_starts_of_token ON public.remote_starts USING btree (app_id, device_id, activity_type, token, accepted_at);

ALTER TABLE ONLY public.event_traces
    ADD CONSTRAINT event_traces_pkey PRIMARY KEY ("position", recorded_at);

ALTER TABLE ONLY public.event_traces_before_partitions
    ADD CONSTRAINT event_traces_before_partitions_pkey PRIMARY KEY ("position", recorded_at);

ALTER TABLE ONLY public.console_sessions
    ADD CONSTRAINT console_sessions_pkey PRIMARY KEY (session_sha256);

CREATE INDEX console_sessions_expiry ON public.console_sessions USING btree (expires_at);

ALTER TABLE ONLY public.erasures
    ADD CONSTRAINT erasures_pkey PRIMARY KEY (id);

CREATE INDEX erasures_pending ON public.erasures USING btree (id) WHERE (finished_at IS NULL);

CREATE INDEX erasures_of_activity ON public.erasures USING btree (app_id, activity_id) WHERE (activity_id IS NOT NULL);

ALTER TABLE ONLY public.erasure_targets
    ADD CONSTRAINT erasure_targets_pkey PRIMARY KEY (erasure_id, app_id, activity_id);

CREATE INDEX erasure_targets_pending ON public.erasure_targets USING btree (app_id, activity_id) WHERE (erased_at IS NULL);

CREATE INDEX erasure_targets_of_activity ON public.erasure_targets USING btree (app_id, activity_id);

ALTER TABLE ONLY public.device_references
    ADD CONSTRAINT device_references_pkey PRIMARY KEY (reference);

ALTER TABLE ONLY public.device_references
    ADD CONSTRAINT device_references_app_id_device_id_key UNIQUE (app_id, device_id);

ALTER TABLE ONLY public.archive_key_nodes
    ADD CONSTRAINT archive_key_nodes_pkey PRIMARY KEY (start);

ALTER TABLE ONLY public.retired_activities
    ADD CONSTRAINT retired_activities_pkey PRIMARY KEY (app_id, activity_id, device_id);

CREATE INDEX retired_activities_of_device ON public.retired_activities USING btree (app_id, device_id);

CREATE INDEX retired_activities_by_time ON public.retired_activities USING btree (retired_at);

ALTER INDEX public.deliveries_pkey ATTACH PARTITION public.deliveries_before_partitions_pkey;

ALTER INDEX public.event_traces_pkey ATTACH PARTITION public.event_traces_before_partitions_pkey;

ALTER INDEX public.events_stream_version ATTACH PARTITION public.events_before_partitions_app_id_activity_id_version_stream__key;

ALTER INDEX public.events_app_position ATTACH PARTITION public.events_before_partitions_app_position;

ALTER INDEX public.events_pkey ATTACH PARTITION public.events_before_partitions_pkey;

ALTER INDEX public.events_remote_starts ATTACH PARTITION public.events_before_partitions_remote_starts;

ALTER INDEX public.push_token_invalidations_activity ATTACH PARTITION public.push_token_invalidations_before_partitions_activity;

ALTER INDEX public.push_token_invalidations_pkey ATTACH PARTITION public.push_token_invalidations_before_partitions_pkey;

ALTER INDEX public.rejections_app_code_time ATTACH PARTITION public.rejections_before_partitions_app_code_time;

ALTER INDEX public.rejections_pkey ATTACH PARTITION public.rejections_before_partitions_pkey;

ALTER INDEX public.rejections_time ATTACH PARTITION public.rejections_before_partitions_time;

ALTER INDEX public.reload_deliveries_by_device ATTACH PARTITION public.reload_deliveries_before_partitions_app_id_device_id_id_idx;

ALTER INDEX public.reload_deliveries_pkey ATTACH PARTITION public.reload_deliveries_before_partitions_pkey;

ALTER INDEX public.reload_deliveries_by_reload ATTACH PARTITION public.reload_deliveries_before_partitions_reload_id_device_id_id_idx;

CREATE OR REPLACE VIEW public.erasure_progress AS
 SELECT e.id,
    e.app_id,
    e.scope,
    e.activity_id,
    e.reference,
    e.requested_by,
    e.requested_at,
    e.finished_at,
    count(t.activity_id) AS activities,
    count(t.erased_at) AS erased
   FROM (public.erasures e
     LEFT JOIN public.erasure_targets t ON ((t.erasure_id = e.id)))
  GROUP BY e.id;

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_app_id_fkey FOREIGN KEY (app_id) REFERENCES public.apps(app_id);

ALTER TABLE ONLY public.apns_credentials
    ADD CONSTRAINT apns_credentials_app_id_fkey FOREIGN KEY (app_id) REFERENCES public.apps(app_id);

ALTER TABLE ONLY public.app_open_stripes
    ADD CONSTRAINT app_open_stripes_app_id_fkey FOREIGN KEY (app_id) REFERENCES public.apps(app_id);

ALTER TABLE ONLY public.broadcast_channels
    ADD CONSTRAINT broadcast_channels_app_id_fkey FOREIGN KEY (app_id) REFERENCES public.apps(app_id);

ALTER TABLE ONLY public.console_sessions
    ADD CONSTRAINT console_sessions_key_id_fkey FOREIGN KEY (key_id) REFERENCES public.api_keys(key_id) ON DELETE CASCADE;

ALTER TABLE ONLY public.delivery_suspensions
    ADD CONSTRAINT delivery_suspensions_app_id_fkey FOREIGN KEY (app_id) REFERENCES public.apps(app_id);

ALTER TABLE ONLY public.device_open_counts
    ADD CONSTRAINT device_open_counts_app_id_fkey FOREIGN KEY (app_id) REFERENCES public.apps(app_id);

ALTER TABLE ONLY public.erasure_targets
    ADD CONSTRAINT erasure_targets_erasure_id_fkey FOREIGN KEY (erasure_id) REFERENCES public.erasures(id);

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_app_id_fkey FOREIGN KEY (app_id) REFERENCES public.apps(app_id);

ALTER TABLE ONLY public.push_to_start_token_changes
    ADD CONSTRAINT push_to_start_token_changes_app_id_fkey FOREIGN KEY (app_id) REFERENCES public.apps(app_id);

ALTER TABLE ONLY public.reload_fanouts
    ADD CONSTRAINT reload_fanouts_reload_id_fkey FOREIGN KEY (reload_id) REFERENCES public.reload_requests(id);

ALTER TABLE ONLY public.reload_requests
    ADD CONSTRAINT reload_requests_app_id_fkey FOREIGN KEY (app_id) REFERENCES public.apps(app_id);

ALTER TABLE ONLY public.reload_token_changes
    ADD CONSTRAINT reload_token_changes_app_id_fkey FOREIGN KEY (app_id) REFERENCES public.apps(app_id);

GRANT SELECT,INSERT,UPDATE ON TABLE public.apps TO liveline_service;

GRANT SELECT(app_id) ON TABLE public.apps TO liveline_dashboard;

GRANT SELECT(bundle_id) ON TABLE public.apps TO liveline_dashboard;

GRANT SELECT(max_open) ON TABLE public.apps TO liveline_dashboard;

GRANT SELECT(max_open_per_device) ON TABLE public.apps TO liveline_dashboard;

GRANT SELECT(priority_budget_per_hour) ON TABLE public.apps TO liveline_dashboard;

GRANT SELECT(frequent_updates) ON TABLE public.apps TO liveline_dashboard;

GRANT SELECT(created_at) ON TABLE public.apps TO liveline_dashboard;

GRANT SELECT(push_to_start_budget_per_hour) ON TABLE public.apps TO liveline_dashboard;

GRANT SELECT,INSERT ON TABLE public.events TO liveline_service;
GRANT SELECT ON TABLE public.events TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.activities TO liveline_service;
GRANT SELECT ON TABLE public.activities TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE,TRUNCATE,UPDATE ON TABLE public.activities_replay TO liveline_service;

GRANT SELECT,INSERT,DELETE,TRUNCATE,UPDATE ON TABLE public.activities_replay_changes TO liveline_service;

GRANT SELECT,INSERT,DELETE,TRUNCATE ON TABLE public.activities_replay_staged TO liveline_service;

GRANT SELECT,INSERT ON TABLE public.admin_changes TO liveline_service;
GRANT SELECT ON TABLE public.admin_changes TO liveline_dashboard;

GRANT SELECT ON TABLE public.alerts_per_minute TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.api_keys TO liveline_service;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.apns_credentials TO liveline_service;

GRANT SELECT(app_id) ON TABLE public.apns_credentials TO liveline_dashboard;

GRANT SELECT(team_id) ON TABLE public.apns_credentials TO liveline_dashboard;

GRANT SELECT(key_id) ON TABLE public.apns_credentials TO liveline_dashboard;

GRANT SELECT(environment) ON TABLE public.apns_credentials TO liveline_dashboard;

GRANT SELECT(public_key_sha256) ON TABLE public.apns_credentials TO liveline_dashboard;

GRANT SELECT(updated_at) ON TABLE public.apns_credentials TO liveline_dashboard;

GRANT SELECT,INSERT,UPDATE ON TABLE public.app_open_stripes TO liveline_service;
GRANT SELECT ON TABLE public.app_open_stripes TO liveline_dashboard;

GRANT SELECT ON TABLE public.app_open_counts TO liveline_dashboard;
GRANT SELECT ON TABLE public.app_open_counts TO liveline_service;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.archive_key_nodes TO liveline_service;

GRANT SELECT,INSERT ON TABLE public.broadcast_channels TO liveline_service;
GRANT SELECT ON TABLE public.broadcast_channels TO liveline_dashboard;

GRANT UPDATE(deleted_at) ON TABLE public.broadcast_channels TO liveline_service;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.global_open_stripes TO liveline_service;
GRANT SELECT ON TABLE public.global_open_stripes TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.service_limits TO liveline_service;
GRANT SELECT ON TABLE public.service_limits TO liveline_dashboard;

GRANT SELECT ON TABLE public.cap_utilisation TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE ON TABLE public.console_sessions TO liveline_service;

GRANT SELECT,INSERT ON TABLE public.deliveries TO liveline_service;
GRANT SELECT ON TABLE public.deliveries TO liveline_dashboard;

GRANT SELECT,INSERT ON TABLE public.deliveries_before_partitions TO liveline_service;
GRANT SELECT ON TABLE public.deliveries_before_partitions TO liveline_dashboard;

GRANT USAGE ON SEQUENCE public.deliveries_id_seq TO liveline_service;

GRANT SELECT ON TABLE public.deliveries_per_minute TO liveline_dashboard;

GRANT SELECT ON TABLE public.delivery_failures_by_reason TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE ON TABLE public.delivery_holds TO liveline_service;
GRANT SELECT ON TABLE public.delivery_holds TO liveline_dashboard;

GRANT SELECT ON TABLE public.delivery_latency_per_minute TO liveline_dashboard;

GRANT SELECT,UPDATE ON TABLE public.delivery_shards TO liveline_service;
GRANT SELECT ON TABLE public.delivery_shards TO liveline_dashboard;

GRANT SELECT,INSERT ON TABLE public.delivery_suspensions TO liveline_service;
GRANT SELECT ON TABLE public.delivery_suspensions TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.delivery_workers TO liveline_service;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.device_open_counts TO liveline_service;
GRANT SELECT ON TABLE public.device_open_counts TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.device_references TO liveline_service;

GRANT SELECT ON TABLE public.erasure_progress TO liveline_service;
GRANT SELECT ON TABLE public.erasure_progress TO liveline_dashboard;

GRANT SELECT,INSERT,UPDATE ON TABLE public.erasure_targets TO liveline_service;
GRANT SELECT ON TABLE public.erasure_targets TO liveline_dashboard;

GRANT SELECT,INSERT,UPDATE ON TABLE public.erasures TO liveline_service;
GRANT SELECT ON TABLE public.erasures TO liveline_dashboard;

GRANT SELECT,INSERT ON TABLE public.event_traces TO liveline_service;
GRANT SELECT ON TABLE public.event_traces TO liveline_dashboard;

GRANT SELECT,INSERT ON TABLE public.events_before_partitions TO liveline_service;
GRANT SELECT ON TABLE public.events_before_partitions TO liveline_dashboard;

GRANT SELECT ON TABLE public.events_per_minute TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.idempotency_keys TO liveline_service;

GRANT SELECT,INSERT ON TABLE public.push_token_invalidations TO liveline_service;
GRANT SELECT ON TABLE public.push_token_invalidations TO liveline_dashboard;

GRANT SELECT ON TABLE public.invalidated_tokens_per_minute TO liveline_dashboard;

GRANT SELECT ON TABLE public.liveline_activity_rows TO liveline_service;

GRANT UPDATE ON TABLE public.liveline_append_gate TO liveline_service;

GRANT SELECT ON TABLE public.liveline_migrations TO liveline_service;

GRANT SELECT ON TABLE public.liveline_replay_rows TO liveline_service;

GRANT SELECT ON TABLE public.log_partitions TO liveline_service;
GRANT SELECT ON TABLE public.log_partitions TO liveline_dashboard;

GRANT UPDATE(settled_at) ON TABLE public.log_partitions TO liveline_service;

GRANT UPDATE(archive) ON TABLE public.log_partitions TO liveline_service;

GRANT UPDATE(retired_at) ON TABLE public.log_partitions TO liveline_service;

GRANT SELECT ON TABLE public.log_partition_sizes TO liveline_dashboard;

GRANT SELECT,UPDATE ON TABLE public.log_partitioning TO liveline_service;
GRANT SELECT ON TABLE public.log_partitioning TO liveline_dashboard;

GRANT SELECT ON TABLE public.open_activities TO liveline_dashboard;

GRANT SELECT,INSERT ON TABLE public.push_to_start_token_changes TO liveline_service;
GRANT SELECT ON TABLE public.push_to_start_token_changes TO liveline_dashboard;

GRANT SELECT ON TABLE public.push_to_start_tokens TO liveline_service;
GRANT SELECT ON TABLE public.push_to_start_tokens TO liveline_dashboard;

GRANT SELECT,INSERT ON TABLE public.push_token_invalidations_before_partitions TO liveline_service;
GRANT SELECT ON TABLE public.push_token_invalidations_before_partitions TO liveline_dashboard;

GRANT USAGE ON SEQUENCE public.push_token_invalidations_id_seq TO liveline_service;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.rejections TO liveline_service;
GRANT SELECT ON TABLE public.rejections TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.rejections_before_partitions TO liveline_service;
GRANT SELECT ON TABLE public.rejections_before_partitions TO liveline_dashboard;

GRANT USAGE ON SEQUENCE public.rejections_id_seq TO liveline_service;

GRANT SELECT ON TABLE public.rejections_per_minute TO liveline_dashboard;

GRANT SELECT,INSERT ON TABLE public.reload_deliveries TO liveline_service;
GRANT SELECT ON TABLE public.reload_deliveries TO liveline_dashboard;

GRANT USAGE ON SEQUENCE public.reload_deliveries_id_seq TO liveline_service;

GRANT SELECT ON TABLE public.reload_deliveries_per_minute TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.reload_fanouts TO liveline_service;
GRANT SELECT ON TABLE public.reload_fanouts TO liveline_dashboard;

GRANT SELECT,INSERT ON TABLE public.reload_requests TO liveline_service;
GRANT SELECT ON TABLE public.reload_requests TO liveline_dashboard;

GRANT UPDATE(idempotency_key) ON TABLE public.reload_requests TO liveline_service;

GRANT UPDATE(request_sha256) ON TABLE public.reload_requests TO liveline_service;

GRANT SELECT ON TABLE public.reload_progress TO liveline_dashboard;

GRANT SELECT,UPDATE ON TABLE public.reload_shards TO liveline_service;
GRANT SELECT ON TABLE public.reload_shards TO liveline_dashboard;

GRANT SELECT,INSERT ON TABLE public.reload_token_changes TO liveline_service;
GRANT SELECT ON TABLE public.reload_token_changes TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.reload_tokens TO liveline_service;
GRANT SELECT ON TABLE public.reload_tokens TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.reload_workers TO liveline_service;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.remote_starts TO liveline_service;
GRANT SELECT ON TABLE public.remote_starts TO liveline_dashboard;

GRANT SELECT ON TABLE public.remote_start_verdicts_per_minute TO liveline_dashboard;

GRANT SELECT,INSERT,DELETE,UPDATE ON TABLE public.retired_activities TO liveline_service;

GRANT SELECT ON TABLE public.state_intervals TO liveline_dashboard;

GRANT SELECT ON TABLE public.time_in_state TO liveline_dashboard;

-- The rows the migrations seed.

INSERT INTO public.delivery_shards (shard, "position", owner, lease_expires_at) VALUES
	(0, 0, NULL, NULL),
	(1, 0, NULL, NULL),
	(2, 0, NULL, NULL),
	(3, 0, NULL, NULL),
	(4, 0, NULL, NULL),
	(5, 0, NULL, NULL),
	(6, 0, NULL, NULL),
	(7, 0, NULL, NULL),
	(8, 0, NULL, NULL),
	(9, 0, NULL, NULL),
	(10, 0, NULL, NULL),
	(11, 0, NULL, NULL),
	(12, 0, NULL, NULL),
	(13, 0, NULL, NULL),
	(14, 0, NULL, NULL),
	(15, 0, NULL, NULL);

INSERT INTO public.global_open_stripes (stripe, capacity, open) VALUES
	(0, 6250, 0),
	(1, 6250, 0),
	(2, 6250, 0),
	(3, 6250, 0),
	(4, 6250, 0),
	(5, 6250, 0),
	(6, 6250, 0),
	(7, 6250, 0),
	(8, 6250, 0),
	(9, 6250, 0),
	(10, 6250, 0),
	(11, 6250, 0),
	(12, 6250, 0),
	(13, 6250, 0),
	(14, 6250, 0),
	(15, 6250, 0);

INSERT INTO public.log_partitioning (only_row, partition_interval, partitions_ahead) VALUES
	(true, '1 day', 2);

INSERT INTO public.log_partitions (table_name, parent, from_time, to_time, created_at, settled_at, archive, retired_at) VALUES
	('events_before_partitions', 'events', '-infinity', '2000-01-01 00:00:00+00', now(), NULL, NULL, NULL),
	('deliveries_before_partitions', 'deliveries', '-infinity', date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'), now(), date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'), NULL, NULL),
	('push_token_invalidations_before_partitions', 'push_token_invalidations', '-infinity', date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'), now(), date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'), NULL, NULL),
	('rejections_before_partitions', 'rejections', '-infinity', date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'), now(), date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'), NULL, NULL),
	('reload_deliveries_before_partitions', 'reload_deliveries', '-infinity', date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'), now(), date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'), NULL, NULL),
	('event_traces_before_partitions', 'event_traces', '-infinity', date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'), now(), date_bin('1 day'::interval, now(), '2000-01-01 00:00:00+00'), NULL, NULL);

INSERT INTO public.reload_shards (shard, owner, lease_expires_at) VALUES
	(0, NULL, NULL),
	(1, NULL, NULL),
	(2, NULL, NULL),
	(3, NULL, NULL),
	(4, NULL, NULL),
	(5, NULL, NULL),
	(6, NULL, NULL),
	(7, NULL, NULL),
	(8, NULL, NULL),
	(9, NULL, NULL),
	(10, NULL, NULL),
	(11, NULL, NULL),
	(12, NULL, NULL),
	(13, NULL, NULL),
	(14, NULL, NULL),
	(15, NULL, NULL);

INSERT INTO public.service_limits (singleton, global_max_open, open_excess) VALUES
	(true, 100000, 0);

SELECT pg_catalog.setval('public.admin_changes_id_seq', 1, false);

SELECT pg_catalog.setval('public.deliveries_id_seq', 1, false);

SELECT pg_catalog.setval('public.delivery_suspensions_id_seq', 1, false);

SELECT pg_catalog.setval('public.erasures_id_seq', 1, false);

SELECT pg_catalog.setval('public.push_to_start_token_changes_id_seq', 1, false);

SELECT pg_catalog.setval('public.push_token_invalidations_id_seq', 1, false);

SELECT pg_catalog.setval('public.rejections_id_seq', 1, false);

SELECT pg_catalog.setval('public.reload_deliveries_id_seq', 1, false);

SELECT pg_catalog.setval('public.reload_requests_id_seq', 1, false);

SELECT pg_catalog.setval('public.reload_token_changes_id_seq', 1, false);

-- The log split by time (#40). Each activity's events live in the partition of the time its
-- stream began: `stream_recorded_at`, the database's clock when its first event was recorded
-- (the same in every event of the stream). So a partition holds whole streams, and one whose
-- activities were all dismissed long ago can be archived and dropped whole: the live log never
-- starts a stream in the middle. Partitions are created ahead and retired behind by the server
-- (`liveline_create_partitions`).
--
-- The events recorded before this migration stay where they are: their table becomes the
-- partition of every time before 2000 (`events_before_partitions`), and their streams'
-- `stream_recorded_at` is '-infinity', in the projection too, so that the events those
-- activities still get go there as well. No event row is rewritten.
--
-- A key of a partitioned table includes the partition's key, so "a stream holds each version
-- once" is now enforced per stream beginning: the append functions give every event of a stream
-- its stream's time, and `liveline verify` finds any stream whose events disagree.

-- The projection remembers when each stream began, for the partition of its next events.
ALTER TABLE activities ADD COLUMN stream_recorded_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE activities ALTER COLUMN stream_recorded_at DROP DEFAULT;
ALTER TABLE activities_replay ADD COLUMN stream_recorded_at timestamptz;
ALTER TABLE activities_replay_staged ADD COLUMN stream_recorded_at timestamptz;

-- The views over `events` follow the table they were made on, whatever its name: their text
-- is kept to make them again over the partitioned table.
CREATE TEMPORARY TABLE event_views ON COMMIT DROP AS
    SELECT DISTINCT v.oid::regclass::text AS name, pg_get_viewdef(v.oid) AS definition, v.oid
    FROM pg_depend d
    JOIN pg_rewrite r ON r.oid = d.objid
    JOIN pg_class v ON v.oid = r.ev_class AND v.relkind = 'v'
    WHERE d.refobjid = 'events'::regclass AND v.oid <> 'events'::regclass;

ALTER TABLE events RENAME TO events_before_partitions;
-- Its keys become the partitioned table's, which include the partition's key (built on attach).
ALTER TABLE events_before_partitions DROP CONSTRAINT events_pkey;
ALTER TABLE events_before_partitions DROP CONSTRAINT events_app_id_activity_id_version_key;
ALTER INDEX events_app_position RENAME TO events_before_partitions_app_position;
ALTER INDEX events_remote_starts RENAME TO events_before_partitions_remote_starts;
ALTER INDEX events_type_occurred RENAME TO events_before_partitions_type_occurred;
DROP TRIGGER events_no_update_or_delete ON events_before_partitions;
ALTER TABLE events_before_partitions ADD COLUMN stream_recorded_at timestamptz NOT NULL DEFAULT '-infinity';
ALTER TABLE events_before_partitions ALTER COLUMN stream_recorded_at DROP DEFAULT;
ALTER TABLE events_before_partitions
    ADD CONSTRAINT events_before_partitions_bound CHECK (stream_recorded_at < '2000-01-01 00:00:00+00');

CREATE TABLE events (
    position bigint NOT NULL,
    transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
    app_id liveline_id NOT NULL,
    activity_id liveline_id NOT NULL,
    version integer NOT NULL CONSTRAINT events_version_check CHECK (version > 0),
    type text NOT NULL CONSTRAINT events_type_check CHECK (type ~ '^activity\.[a-z_]+$'),
    data jsonb NOT NULL DEFAULT '{}' CONSTRAINT events_data_check CHECK (jsonb_typeof(data) = 'object'),
    caused_by event_cause NOT NULL,
    occurred_at timestamptz NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    -- The functions that append set it; a row written by hand begins a stream now.
    stream_recorded_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT events_position_in_transaction CHECK (position >> 16 = transaction_id::text::bigint),
    CONSTRAINT events_pkey PRIMARY KEY (position, stream_recorded_at),
    CONSTRAINT events_stream_version UNIQUE (app_id, activity_id, version, stream_recorded_at)
) PARTITION BY RANGE (stream_recorded_at);
CREATE INDEX events_app_position ON events (app_id, position);
CREATE INDEX events_remote_starts ON events (app_id, (data ->> 'deviceId'), occurred_at)
    WHERE type = 'activity.requested' AND data ? 'remoteStart';
CREATE INDEX events_type_occurred ON events (type, occurred_at);
CREATE TRIGGER events_no_update_or_delete BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION liveline_refuse_event_change();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION liveline_refuse_event_change();
ALTER TABLE events ATTACH PARTITION events_before_partitions FOR VALUES FROM (MINVALUE) TO ('2000-01-01 00:00:00+00');

REVOKE ALL ON events FROM PUBLIC;
GRANT SELECT, INSERT ON events TO liveline_service;
GRANT SELECT ON events TO liveline_dashboard;

DO $$
DECLARE
    v record;
BEGIN
    FOR v IN SELECT * FROM event_views ORDER BY oid LOOP
        EXECUTE format('CREATE OR REPLACE VIEW %s AS %s', v.name, v.definition);
    END LOOP;
END
$$;

-- Which partitions the server keeps: the length of each (new ones start where the last ends),
-- and how many ahead of now. Retention is the server's setting; the interval may be changed
-- here (`liveline_create_partitions` takes the new one for the partitions it creates next).
CREATE TABLE log_partitioning (
    only_row boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    partition_interval interval NOT NULL DEFAULT '1 day' CHECK (partition_interval >= '1 minute'),
    partitions_ahead integer NOT NULL DEFAULT 2 CHECK (partitions_ahead BETWEEN 1 AND 100)
);
INSERT INTO log_partitioning DEFAULT VALUES;
GRANT SELECT, UPDATE ON log_partitioning TO liveline_service;
GRANT SELECT ON log_partitioning TO liveline_dashboard;

-- Every partition the server made or keeps, with the times it covers: what retention and the
-- archives go by, and what dashboards show.
CREATE TABLE log_partitions (
    table_name text PRIMARY KEY,
    parent text NOT NULL CHECK (parent IN ('events')),
    from_time timestamptz NOT NULL,
    to_time timestamptz NOT NULL CHECK (to_time > from_time),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX log_partitions_parent_to_time ON log_partitions (parent, to_time);
INSERT INTO log_partitions (table_name, parent, from_time, to_time)
    VALUES ('events_before_partitions', 'events', '-infinity', '2000-01-01 00:00:00+00');
GRANT SELECT ON log_partitions TO liveline_service, liveline_dashboard;

-- For dashboards: each partition of the log, the times it covers and its size.
CREATE VIEW log_partition_sizes AS
    SELECT table_name AS partition, from_time, to_time, pg_total_relation_size(quote_ident(table_name)::regclass) AS bytes
    FROM log_partitions;
GRANT SELECT ON log_partition_sizes TO liveline_dashboard;
